package clip_test

import (
	"encoding/json"
	"strings"
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

func TestBytesCutsOnARuneBoundaryWithoutAMark(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"one too many", 11, "one too man"},
		{"aé", 2, "a"}, // é is two bytes: it is left out, not split
		{"日本", 4, "日"},
	} {
		if got := clip.Bytes(c.in, c.n); got != c.want {
			t.Errorf("Bytes(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestStoredIsOneLineOfValidUTF8WithinItsBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"dial tcp: timeout", 100, "dial tcp: timeout"},
		{"two\nlines\x00nul", 100, "two lines nul"},
		{"bad \xff byte", 100, "bad ? byte"},
		{"ünïcode", 4, "ün"}, // ï would end past the fourth byte
	} {
		if got := clip.Stored(c.in, c.n); got != c.want {
			t.Errorf("Stored(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
	if got, want := clip.Flat("a\xffb\tc", "\uFFFD"), "a\uFFFDb c"; got != want {
		t.Errorf("Flat = %q, want %q", got, want)
	}
}

func TestCellIsTrimmedTo100Runes(t *testing.T) {
	if got := clip.Cell("  ok \n"); got != "ok" {
		t.Errorf("Cell = %q", got)
	}
	long := strings.Repeat("é", 150)
	if got := clip.Cell(long); len([]rune(got)) != 100 || !strings.HasSuffix(got, "…") {
		t.Errorf("Cell of 150 runes = %d runes %q", len([]rune(got)), got)
	}
}

func TestJSONBidiEscapesWhatReordersTheScreenAndKeepsTheValue(t *testing.T) {
	in := []byte(`{"eventId":"evt-` + "\u202e" + `gpj.exe","ok":"café"}`)
	out := clip.JSONBidi(in)
	if string(out) != `{"eventId":"evt-\u202egpj.exe","ok":"café"}` {
		t.Fatalf("JSONBidi = %s", out)
	}
	var a, b map[string]string
	if json.Unmarshal(in, &a) != nil || json.Unmarshal(out, &b) != nil || a["eventId"] != b["eventId"] {
		t.Fatalf("the value changed: %q -> %q", a["eventId"], b["eventId"])
	}
}
