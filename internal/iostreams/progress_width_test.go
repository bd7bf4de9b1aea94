package iostreams

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// execute's bar never wraps an 80-column terminal: the bar narrows, then goes, before the
// figures are cut.
func TestTheBarFitsItsLineAt80Columns(t *testing.T) {
	st := &progressState{label: "execute: publishing (12 failed, 3 uncertain)", total: 1_000_000, n: 450_000, unit: "targets",
		rate: 37_000, rateGiven: true}
	line := barLine(st, DefaultWidth-1)
	if n := utf8.RuneCountInString(line); n > DefaultWidth-1 || !strings.Contains(line, "450000/1000000 targets (45%)") {
		t.Fatalf("%d columns: %q", n, line)
	}
	if wide := barLine(st, 200); !strings.Contains(wide, "["+strings.Repeat("=", 13)) {
		t.Fatalf("on a wide terminal the bar is drawn whole: %q", wide)
	}
}
