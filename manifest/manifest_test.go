package manifest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/manifest"
)

func TestRoundTrip(t *testing.T) {
	m := sealed(t, 5)
	data := fileForm(t, m)

	got, err := manifest.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("decoded manifest differs:\n got %+v\nwant %+v", got, m)
	}
	d, err := manifest.ComputeDigest(got)
	if err != nil {
		t.Fatal(err)
	}
	if d != m.Digest {
		t.Errorf("digest after round trip = %s, want %s", d, m.Digest)
	}
	if again := fileForm(t, got); !bytes.Equal(again, data) {
		t.Errorf("re-encoding the decoded manifest changed the file:\n%s\n---\n%s", again, data)
	}
}

func TestEncodeFileForm(t *testing.T) {
	data := fileForm(t, sealed(t, 2))
	if !bytes.HasPrefix(data, []byte("{\n  \"apiVersion\": \"replayctl/v1\",\n  \"kind\": \"Manifest\",\n  \"jobId\": ")) {
		t.Errorf("file does not start with two-space indented apiVersion:\n%.80s", data)
	}
	if !bytes.HasSuffix(data, []byte("\n}\n")) {
		t.Errorf("file does not end with a newline after the object: %q", data[len(data)-10:])
	}
	if !bytes.Contains(data, []byte(`"provider <503>": 1`)) {
		t.Errorf("file escapes HTML characters or lost a failure reason:\n%s", data)
	}
	if !bytes.Contains(data, []byte("\n    \"evt-0000001\"\n  ],")) {
		t.Errorf("event IDs are not one per line:\n%s", data)
	}
}

func TestCanonicalEncoding(t *testing.T) {
	m := &manifest.Manifest{
		APIVersion: manifest.APIVersion,
		Kind:       manifest.KindManifest,
		ID:         "j1",
		CreatedAt:  time.Date(2025, 3, 2, 16, 0, 0, 500, time.FixedZone("CET", 3600)),
		Reason:     "a&b <c>",
		EventIDs:   []string{"e1"},
		Digest:     "sha256:ignored",
	}
	got, err := manifest.Canonical(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"replayctl/v1","kind":"Manifest","jobId":"j1","createdAt":"2025-03-02T15:00:00.0000005Z","createdBy":"",` +
		`"reason":"a&b <c>","consumer":"","source":{"stream":"","headers":{"eventId":"","reason":"",` +
		`"originalSubject":"","attempts":"","failedAt":""},"firstSeq":0,"lastSeq":0,"streamLastSeq":0},` +
		`"effectVersion":{"from":0,"to":0},"writeForbidden":false,"stats":{"scanned":0,"missingEventId":0,` +
		`"invalidEventId":0,"missingOriginalSubject":0,"notMatchingFailureFilter":0,"candidates":0,"repeatedInSource":0,` +
		`"duplicateInSource":0,"ledgerPayloadMismatch":0,"alreadyCompleted":0,"completedUnderOlderVersion":0,` +
		`"alreadyCompletedRatio":0,"excludedUncertain":0,"excludedInFlight":0,"overMax":0,"targets":0,` +
		`"failureReasons":{}},"expectedExternalCalls":0,"externalCallsEstimate":{"method":"","knownTargets":0,` +
		`"knownCalls":0,"estimatedTargets":0,"meanPerEffect":0,"sampleSize":0},"excluded":{"uncertain":[],` +
		`"inFlight":[],"conflicts":[],"missingEventIdSeqs":[]},"eventIds":["e1"]}`
	if string(got) != want {
		t.Errorf("Canonical =\n%s\nwant\n%s", got, want)
	}
	d, err := manifest.ComputeDigest(m)
	if err != nil {
		t.Fatal(err)
	}
	const wantDigest = "sha256:"
	if !strings.HasPrefix(d, wantDigest) || len(d) != len(wantDigest)+64 || strings.ToLower(d) != d {
		t.Errorf("ComputeDigest = %q, want sha256: and 64 lowercase hex digits", d)
	}
	if m.Digest != "sha256:ignored" {
		t.Errorf("ComputeDigest changed m.Digest to %q", m.Digest)
	}
}

func TestDigestIgnoresRepresentation(t *testing.T) {
	base := validManifest(t, 3)
	want, err := manifest.ComputeDigest(base)
	if err != nil {
		t.Fatal(err)
	}

	empty := validManifest(t, 3)
	nilled := validManifest(t, 3)
	nilled.Stats.FailureReasons = nil
	nilled.Excluded = manifest.Excluded{}
	empty.Stats.FailureReasons = map[string]int64{}
	empty.Excluded = manifest.Excluded{Uncertain: []manifest.LedgerExclusion{}, InFlight: []manifest.LedgerExclusion{},
		Conflicts: []manifest.Conflict{}, MissingEventIDSeqs: []uint64{}}
	dn, _ := manifest.ComputeDigest(nilled)
	de, _ := manifest.ComputeDigest(empty)
	if dn != de {
		t.Errorf("nil and empty collections digest differently: %s vs %s", dn, de)
	}

	zoned := validManifest(t, 3)
	zoned.CreatedAt = zoned.CreatedAt.In(time.FixedZone("UTC+5", 5*3600))
	if d, _ := manifest.ComputeDigest(zoned); d != want {
		t.Errorf("the same instant in another zone digests to %s, want %s", d, want)
	}

	// Re-indenting the file is not an edit: the digest covers content, not layout.
	m := sealed(t, 3)
	var compact bytes.Buffer
	if err := json.Compact(&compact, fileForm(t, m)); err != nil {
		t.Fatal(err)
	}
	if _, err := manifest.Decode(&compact); err != nil {
		t.Errorf("Decode of the compacted file: %v", err)
	}
}

func TestHandEditIsTampering(t *testing.T) {
	tests := []struct{ name, old, new string }{
		{"reason", `"provider outage INC-4521 fixed; re-run failed charges"`, `"provider outage INC-4521 fixed; re-run all charges"`},
		{"one event ID", `"evt-0000003"`, `"evt-0000003a"`},
		{"a stat", `"scanned": 12`, `"scanned": 13`},
		{"writeForbidden", `"writeForbidden": false`, `"writeForbidden": true`},
		{"a time", `"createdAt": "2025-03-02T14:00:00.123456789Z"`, `"createdAt": "2025-03-02T14:00:00.123456788Z"`},
	}
	m := sealed(t, 5)
	data := string(fileForm(t, m))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Count(data, tt.old) != 1 {
				t.Fatalf("the file holds %q %d times, want once", tt.old, strings.Count(data, tt.old))
			}
			_, err := manifest.Decode(strings.NewReader(strings.Replace(data, tt.old, tt.new, 1)))
			if !errors.Is(err, manifest.ErrTampered) || !errors.Is(err, manifest.ErrInvalid) {
				t.Fatalf("Decode error = %v, want ErrTampered matching ErrInvalid", err)
			}
			for _, want := range []string{
				"expected sha256:", `found "` + m.Digest + `"`,
				"the manifest was edited after plan; re-run `replayctl plan` instead of editing it",
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestMissingDigest(t *testing.T) {
	m := validManifest(t, 2)
	_, err := manifest.Decode(bytes.NewReader(fileForm(t, m)))
	if !errors.Is(err, manifest.ErrTampered) || !strings.Contains(err.Error(), "no digest") {
		t.Fatalf("Decode of an unsealed manifest: %v, want ErrTampered saying no digest", err)
	}
}

func TestSealIsDeterministic(t *testing.T) {
	a, b := sealed(t, 10), sealed(t, 10)
	if a.Digest != b.Digest {
		t.Errorf("equal manifests sealed to %s and %s", a.Digest, b.Digest)
	}
	c := validManifest(t, 10)
	c.EventIDs[9] = "evt-0000009b"
	if err := manifest.Seal(c); err != nil {
		t.Fatal(err)
	}
	if c.Digest == a.Digest {
		t.Errorf("changing one event ID left the digest at %s", c.Digest)
	}
}
