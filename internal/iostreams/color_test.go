package iostreams

import (
	"strings"
	"testing"
)

func TestColorOnlyOnATerminalWithoutNoColor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tty     bool
		noColor string
		json    bool
		want    bool
	}{
		{"tty", true, "", false, true},
		{"tty NO_COLOR=1", true, "1", false, false},
		{"tty NO_COLOR=false counts too: any non-empty value", true, "false", false, false},
		{"no tty", false, "", false, false},
		{"tty --json", true, "", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NO_COLOR", tc.noColor)
			ios, _, _, _ := Test()
			ios.SetStdoutTTY(tc.tty)
			ios.SetMachineOutput(tc.json)
			if got := ios.ColorEnabled(); got != tc.want {
				t.Fatalf("ColorEnabled() = %v, want %v", got, tc.want)
			}
			p := ios.Palette()
			for _, s := range []string{p.Pass("PASS"), p.Fail("FAIL"), p.Warn("WARN")} {
				if strings.Contains(s, "\x1b[") != tc.want {
					t.Errorf("%q: escape present %v, want %v", s, !tc.want, tc.want)
				}
			}
			if tc.want && p.Fail("FAIL") != "\x1b[1;31mFAIL\x1b[0m" {
				t.Errorf("Fail = %q", p.Fail("FAIL"))
			}
		})
	}
}
