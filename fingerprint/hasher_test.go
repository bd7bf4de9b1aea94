package fingerprint_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/fingerprint"
)

func mustNew(t *testing.T, o fingerprint.Options) fingerprint.Hasher {
	t.Helper()
	h, err := fingerprint.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestV2NameCarriesTheOptions(t *testing.T) {
	plain := mustNew(t, fingerprint.Options{})
	sent := mustNew(t, fingerprint.Options{Exclude: []string{"sentAt"}})
	sets := mustNew(t, fingerprint.Options{Sets: []string{"sentAt"}})
	names := map[string]bool{plain.Algorithm(): true, sent.Algorithm(): true, sets.Algorithm(): true, fingerprint.Algorithm: true}
	if len(names) != 4 {
		t.Fatalf("different options share an algorithm name: %v", names)
	}
	for _, h := range []fingerprint.Hasher{plain, sent, sets} {
		if !fingerprint.IsV2(h.Algorithm()) || len(h.Algorithm()) != len(fingerprint.V2Prefix)+8 {
			t.Errorf("algorithm %q is not %s<8 hex>", h.Algorithm(), fingerprint.V2Prefix)
		}
	}
	payload := []byte(`{"a":1,"sentAt":"t"}`)
	if sent.Sum(payload) == plain.Sum(payload) {
		t.Fatal("excluding sentAt did not change the fingerprint of a payload that has it")
	}
}

func TestNewRefusesEmptyKeys(t *testing.T) {
	for _, bad := range []string{"", ".a", "a.", "a..b"} {
		_, err := fingerprint.New(fingerprint.Options{Exclude: []string{bad}})
		if !errors.Is(err, fingerprint.ErrBadOptions) || !strings.Contains(err.Error(), "exclude") {
			t.Errorf("Exclude %q: %v, want ErrBadOptions naming the field", bad, err)
		}
		if _, err := fingerprint.New(fingerprint.Options{Sets: []string{bad}}); !errors.Is(err, fingerprint.ErrBadOptions) {
			t.Errorf("Sets %q: %v, want ErrBadOptions", bad, err)
		}
	}
}

func TestResolveComputesOnlyKnownAlgorithms(t *testing.T) {
	opts := fingerprint.Options{Exclude: []string{"trace.*"}}
	h := mustNew(t, opts)
	if got, err := fingerprint.Resolve(fingerprint.Algorithm); err != nil || got.Algorithm() != fingerprint.Algorithm {
		t.Fatalf("v1 must always resolve: %v %v", got.Algorithm(), err)
	}
	stored, err := fingerprint.ParseOptions(opts.Encode())
	if err != nil {
		t.Fatal(err)
	}
	got, err := fingerprint.Resolve(h.Algorithm(), fingerprint.Options{Sets: []string{"x"}}, stored)
	if err != nil || got.Algorithm() != h.Algorithm() {
		t.Fatalf("Resolve(%s) = %s, %v", h.Algorithm(), got.Algorithm(), err)
	}
	for _, unknown := range []string{fingerprint.V2Prefix + "00000000", "sha256-canon-v3+abcdef01", ""} {
		if _, err := fingerprint.Resolve(unknown, opts); !errors.Is(err, fingerprint.ErrUnknownAlgorithm) {
			t.Errorf("Resolve(%q) = %v, want ErrUnknownAlgorithm", unknown, err)
		}
	}
}

func TestParseOptionsRefusesUnknownFields(t *testing.T) {
	if _, err := fingerprint.ParseOptions(`{"exclude":[],"sets":[],"arrays":["x"]}`); !errors.Is(err, fingerprint.ErrBadOptions) {
		t.Fatalf("an unknown field was accepted: %v", err)
	}
}

// FuzzV2FastPathAgreesWithReference: v2 without options takes the fast path when it can; the two
// must never disagree, or a payload's v2 fingerprint would depend on which path took it.
func FuzzV2FastPathAgreesWithReference(f *testing.F) {
	for _, s := range agreementSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte("{\"a\":1}\f"))
	h, err := fingerprint.New(fingerprint.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := h.Canonical(in), fingerprint.CanonicalV2Reference(in); string(got) != string(want) {
			t.Fatalf("v2 Canonical(%q) = %q, reference %q", in, got, want)
		}
	})
}

// FuzzV2WithOptionsIsIdempotent: the canonical form is a fixed point (canonicalising it again under
// the same options changes nothing), or the same request could hash two ways depending on whether
// a producer had already normalised it.
func FuzzV2WithOptionsIsIdempotent(f *testing.F) {
	for _, s := range agreementSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"tags":["b","a"],"trace":{"id":"x"},"lines":[{"sentAt":1,"tags":[2,1]},{"k":"v"}]}`))
	h, err := fingerprint.New(fingerprint.Options{Exclude: []string{"sentAt", "trace.*", "lines.sentAt"}, Sets: []string{"tags", "lines", "lines.tags"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		once := h.Canonical(in)
		if twice := h.Canonical(once); string(twice) != string(once) {
			t.Fatalf("Canonical(%q) = %q, but Canonical of that = %q", in, once, twice)
		}
	})
}
