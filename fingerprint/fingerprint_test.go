package fingerprint_test

import (
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
