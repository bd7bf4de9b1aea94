package clip_test

import (
	"testing"

	"github.com/replayctl/replayctl/internal/clip"
)

func TestRunesCutsOnARuneAndSaysSo(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"one too many", 11, "one too ma…"},
		{"ééééé", 3, "éé…"},
	} {
		if got := clip.Runes(c.in, c.n); got != c.want {
			t.Errorf("Runes(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestLineEscapesWhatATerminalWouldObey(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain, ünïcode and 日本", "plain, ünïcode and 日本"},
		{"eve\x1b]0;PWNED\x1b\\", `eve\x1b]0;PWNED\x1b\`},
		{"red \x1b[31mtext", `red \x1b[31mtext`},
		{"two\nlines\tand\rback", `two\nlines\tand\rback`},
		{"C1 \u009b31m and DEL \x7f", `C1 \u009b31m and DEL \x7f`},
		{"bidi \u202eevil\u2066", `bidi \u202eevil\u2066`},
		{"bad \xff byte", `bad \xff byte`},
	} {
		if got := clip.Line(c.in); got != c.want {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got, want := clip.Text("line one\n\tline two \x1b[2J"), "line one\n\tline two \\x1b[2J"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
}
