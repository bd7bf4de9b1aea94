package actor

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalizeRefusesLookalikesAndKeepsOneSpellingPerName(t *testing.T) {
	for _, ok := range []struct{ in, want string }{
		{"alice", "alice"},
		{"  alice ", "alice"},
		{"Ren\u0065\u0301", "Ren\u00e9"}, // e + combining acute is é
		{"José García", "José García"},
		{"Дмитрий", "Дмитрий"},
		{"山田太郎", "山田太郎"},
		{"やまだ 太郎", "やまだ 太郎"},
		{"team-lead 2", "team-lead 2"},
	} {
		got, err := Normalize(ok.in)
		if err != nil || got != ok.want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", ok.in, got, err, ok.want)
		}
	}
	for in, why := range map[string]string{
		"":                       "empty",
		"   ":                    "empty",
		"\u0430lice":             "mix scripts", // Cyrillic а
		"alice\u200b":            "invisible",   // zero-width space
		"al\u202eecila":          "invisible",   // right-to-left override
		"bob\x1b[31m":            "control",
		"ali\u00adce":            "invisible", // soft hyphen
		strings.Repeat("a", 201): "at most",
	} {
		_, err := Normalize(in)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), why) {
			t.Errorf("Normalize(%q) = %v, want a refusal saying %q", in, err, why)
		}
	}
}

func TestDisplayShowsTheTricksOfAStoredName(t *testing.T) {
	if got := Display("alice"); got != "alice" {
		t.Errorf("Display(alice) = %q", got)
	}
	if got := Display("Дмитрий"); got != "Дмитрий" {
		t.Errorf("a name in one script is shown as it is: %q", got)
	}
	for in, want := range map[string]string{
		"\u0430lice":  `\u0430lice`,
		"alice\u200b": `alice\u200b`,
		"alice ":      `alice `,
	} {
		if got := Display(in); got != want {
			t.Errorf("Display(%q) = %q, want %q", in, got, want)
		}
	}
}
