package fingerprint_test

import (
	"strings"
	"testing"

	"github.com/replayctl/replayctl/fingerprint"
)

func TestPayloadIgnoresKeyOrderAndSpacing(t *testing.T) {
	a := fingerprint.Payload([]byte(`{"amount": 100, "currency":"EUR", "tags":["a","b"]}`))
	b := fingerprint.Payload([]byte(`{"tags":["a","b"],"currency":"EUR","amount":100}`))
	if a != b {
		t.Fatalf("same JSON document, different fingerprints: %s vs %s", a, b)
	}
}

func TestPayloadSeesChangedValues(t *testing.T) {
	a := fingerprint.Payload([]byte(`{"amount":100}`))
	for _, changed := range []string{`{"amount":101}`, `{"amount":"100"}`, `{"amount":100,"x":null}`, `{"amount":1e2}`} {
		if b := fingerprint.Payload([]byte(changed)); a == b {
			t.Errorf("%s has the fingerprint of {\"amount\":100}", changed)
		}
	}
}

func TestCanonicalKeepsNonJSONBytes(t *testing.T) {
	for _, raw := range []string{"plain text", `{"a":1} trailing`, "\xff\xfe", ""} {
		if got := string(fingerprint.Canonical([]byte(raw))); got != raw {
			t.Errorf("Canonical(%q) = %q, want the raw bytes", raw, got)
		}
	}
}

func TestPayloadFormat(t *testing.T) {
	// sha256 of the canonical bytes {"a":1}
	const want = "sha256:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
	if got := fingerprint.Payload([]byte(` { "a" : 1 } `)); got != want {
		t.Fatalf("Payload = %s, want %s", got, want)
	}
}

var agreementSeeds = []string{
	`{"b":1,"a":[1,2,{"z":null,"y":true}],"c":"x"}`,
	` { "amount" : -0.5e+10 , "n" : 0 , "s" : "héllo" } `,
	`{"a":1,"a":2}`,
	`{"esc":"tab\there \"quoted\" \u00e9"}`,
	"{\"sep\":\"\u2028\"}",
	`[1, 2, 3]`, `"just a string"`, `12`, `01`, `1.`, `-`, `tru`, `{"a":}`, `{"a" 1}`, `[1,]`, `{}`, `[]`,
	"{\"bad\":\"\xff\"}", `{"k\u0041":1,"kA":2}`, `null`, `{"a":1} {"b":2}`, "",
}

func TestFastPathAgreesWithReference(t *testing.T) {
	for _, s := range agreementSeeds {
		if got, want := string(fingerprint.Canonical([]byte(s))), string(fingerprint.CanonicalReference([]byte(s))); got != want {
			t.Errorf("Canonical(%q) = %q, reference %q", s, got, want)
		}
	}
}

// FuzzFastPathAgreesWithReference: the fast canonicaliser must never disagree with encoding/json,
// or a payload would fingerprint differently depending on which path took it.
func FuzzFastPathAgreesWithReference(f *testing.F) {
	for _, s := range agreementSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := fingerprint.Canonical(in), fingerprint.CanonicalReference(in); string(got) != string(want) {
			t.Fatalf("Canonical(%q) = %q, reference %q", in, got, want)
		}
	})
}

// BenchmarkCanonical compares the fast canonicaliser with the reference on a typical payload.
func BenchmarkCanonical(b *testing.B) {
	payload := []byte(`{"orderId":"ord-000123","customer":"cus_0042","amountCents":12345,"currency":"EUR","lines":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}],"note":"` + strings.Repeat("x", 700) + `"}`)
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			fingerprint.Canonical(payload)
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			fingerprint.CanonicalReference(payload)
		}
	})
}

func TestPayloadMatchesIsPayloadsEquality(t *testing.T) {
	payload := []byte(`{"b": 1, "a": [true, null]}`)
	hash := fingerprint.Payload(payload)
	for _, c := range []struct {
		name    string
		payload []byte
		want    string
		match   bool
	}{
		{"its own fingerprint", payload, hash, true},
		{"the same value written otherwise", []byte(`{"a":[true,null],"b":1}`), hash, true},
		{"a changed value", []byte(`{"b": 2, "a": [true, null]}`), hash, false},
		{"upper-case hex", payload, "sha256:" + strings.ToUpper(strings.TrimPrefix(hash, "sha256:")), false},
		{"no algorithm prefix", payload, strings.TrimPrefix(hash, "sha256:"), false},
		{"a truncated fingerprint", payload, hash[:len(hash)-1], false},
		{"empty", payload, "", false},
	} {
		if got := fingerprint.PayloadMatches(c.payload, c.want); got != c.match {
			t.Errorf("%s: PayloadMatches = %v, want %v", c.name, got, c.match)
		}
		if got := fingerprint.Payload(c.payload) == c.want; got != c.match {
			t.Errorf("%s: the case itself is wrong: Payload(...) == want is %v", c.name, got)
		}
	}
}
