package suggest

import (
	"slices"
	"testing"
)

func TestClosest(t *testing.T) {
	names := []string{"billing", "billing-eu", "shipping", "ledger-sync"}
	for _, tt := range []struct {
		typed string
		want  []string
	}{
		{"biling", []string{"billing"}},
		{"Billing", []string{"billing", "billing-eu"}},
		{"billign", []string{"billing"}},
		{"bill", []string{"billing", "billing-eu"}},
		{"shiping", []string{"shipping"}},
		{"payments", nil},
		{"billing", []string{"billing-eu"}},
	} {
		if got := Closest(tt.typed, names); !slices.Equal(got, tt.want) {
			t.Errorf("Closest(%q) = %q, want %q", tt.typed, got, tt.want)
		}
	}
}

func TestPhrase(t *testing.T) {
	if got := Phrase([]string{"a", "b", "c", "d"}); got != "did you mean a or b or c?" {
		t.Errorf("Phrase = %q", got)
	}
	if got := Phrase(nil); got != "" {
		t.Errorf("Phrase(nil) = %q", got)
	}
}
