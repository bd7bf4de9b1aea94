package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
)

// On an 80-column terminal status, show, plan, jobs and log draw no line wider than 80: a long
// cell wraps in its column, a long sentence folds, a list drops its least needed columns.
func TestTheOperatorsTablesFit80Columns(t *testing.T) {
	t.Parallel()
	w, m := newShadowedWorld(t, 5, "job-20261202T093000Z-width1")
	if _, stderr, code := w.replayctl(t, "execute --yes "+m.ID); code != 0 {
		t.Fatalf("execute: exit %d %s", code, stderr)
	}
	w.PublishDLQ("evt-width-extra", exectest.Order(99))
	plan := "plan --consumer billing --stream DLQ_BILLING --reason 'provider outage INC-4521 fixed; re-run the late charge' -o " +
		filepath.Join(t.TempDir(), "job.json")
	for _, args := range []string{plan, "status " + m.ID, "show " + m.ID, "jobs", "log " + m.ID} {
		stdout, stderr, code := runCommand(t, true, args+" "+w.flags)
		if code != 0 {
			t.Fatalf("%s: exit %d %s", args, code, stderr)
		}
		for _, line := range strings.Split(stdout, "\n") {
			if n := utf8.RuneCountInString(strings.TrimRight(line, " ")); n > iostreams.DefaultWidth {
				t.Errorf("%s: a %d-column line on an 80-column terminal:\n%s", strings.Fields(args)[0], n, line)
			}
		}
	}
}
