package cmdutil

import (
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/iostreams"
)

// A long warning on a terminal folds between words at its width; in a log it stays one line.
func TestPrintWarningFoldsOnATerminalOnly(t *testing.T) {
	t.Parallel()
	msg := "publishing 20000 targets at 100/s takes 3m20s, longer than the 2m0s duplicate window of stream BILLING: a replay published twice after the window is a second message"
	for _, tty := range []bool{true, false} {
		ios, _, _, errOut := iostreams.Test()
		ios.SetStderrTTY(tty)
		PrintWarning(ios, msg)
		lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
		if !tty {
			if len(lines) != 1 {
				t.Errorf("not a terminal: %d lines, want one", len(lines))
			}
			continue
		}
		if len(lines) < 2 {
			t.Fatalf("a terminal: %d lines, want it folded", len(lines))
		}
		for _, l := range lines {
			if len(l) > iostreams.DefaultWidth {
				t.Errorf("line of %d columns: %q", len(l), l)
			}
			if strings.HasSuffix(l, "dup") || strings.HasPrefix(strings.TrimSpace(l), "licate") {
				t.Errorf("a word cut: %q", l)
			}
		}
	}
}
