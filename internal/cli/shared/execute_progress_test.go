package shared

import (
	"regexp"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/iostreams"
)

func TestExecuteProgressCountsTargetsAndShowsNoETAWhilePaused(t *testing.T) {
	ios, _, _, stderr := iostreams.Test()
	ios.SetStderrTTY(true)
	p := NewExecuteProgress(ios)
	p.Update(executor.Progress{Targets: 100, Remaining: 60, Rate: 4, State: "publishing"})
	if got := lastRedraw(stderr.String()); !strings.Contains(got, "execute: publishing") || !strings.Contains(got, "40/100 targets (40%), 4.0/s, ETA 15s") {
		t.Errorf("publishing bar %q: want targets counted, the settled rate and an ETA", got)
	}
	p.Update(executor.Progress{Targets: 100, Remaining: 60, Rate: 4, State: "paused", Reason: "paused by bob; `replayctl resume job-1` continues"})
	out := stderr.String()
	if got := lastRedraw(out); !strings.Contains(got, "execute: paused") || !strings.Contains(got, "paused, no ETA") || strings.Contains(got, "ETA 15s") {
		t.Errorf("paused bar %q: want no ETA", got)
	}
	if !strings.Contains(out, "paused by bob") {
		t.Errorf("the pause's reason was not printed: %q", out)
	}
	if strings.Contains(out, "it/s") {
		t.Errorf("the bar counts targets, not iterations: %q", out)
	}
	p.Finish()
}

// lastRedraw is what a terminal shows last on the bar's line.
func lastRedraw(s string) string { return s[strings.LastIndex(s, "\r")+1:] }

// TestANoticeOnATTYGetsALineOfItsOwn: a stall, a stuck lease or a NATS reconnect printed while the
// bar is drawn ended up appended to the bar's line and was drawn over at its next redraw.
func TestANoticeOnATTYGetsALineOfItsOwn(t *testing.T) {
	ios, _, _, stderr := iostreams.Test()
	ios.SetStderrTTY(true)
	p := NewExecuteProgress(ios)
	p.Update(executor.Progress{Targets: 100, Remaining: 60, Rate: 4, State: "publishing"})
	p.Notice(executor.Notice{Kind: executor.NoticeStall, Message: "stalled: 40 published targets, no outcome for 1m0s"})
	p.Update(executor.Progress{Targets: 100, Remaining: 50, Rate: 4, State: "publishing"})
	p.Finish()
	out := stderr.String()
	notice := regexp.MustCompile(`ETA 15s\x1b\[K\n\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ execute: stalled: 40 published targets, no outcome for 1m0s\n\r`)
	if !notice.MatchString(out) {
		t.Errorf("the notice does not stand on a line of its own between the bar's draws: %q", out)
	}
}
