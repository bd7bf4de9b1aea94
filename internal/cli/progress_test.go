package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/cli/executecmd"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
)

func TestExecuteProgressCountsTargetsAndShowsNoETAWhilePaused(t *testing.T) {
	ios, _, _, stderr := iostreams.Test()
	ios.SetStderrTTY(true)
	p := executecmd.NewExecuteProgress(ios)
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

func TestExecuteWithoutTTYLogsAProgressLinePerInterval(t *testing.T) {
	w, m := newShadowedWorld(t, 30, "job-cli-progress-lines")
	// --rate 100 holds the publishing of 30 targets to about 0.3 s, three intervals: unpaced, the
	// run could end before the first interval (it did in 1 of 8 runs), and a run shorter than the
	// interval rightly logs no progress line.
	stdout, stderr, code := w.replayctl(t, "execute --yes --rate 100 --progress-interval 100ms "+w.ManifestPath())
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d, want 0:\n%s\n%s", code, stdout, stderr)
	}
	stamp := `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ `
	if !regexp.MustCompile(`(?m)^` + stamp + `publishing 30 targets of job ` + m.ID).MatchString(stderr) {
		t.Errorf("stderr lacks the timestamped publishing step:\n%s", stderr)
	}
	line := regexp.MustCompile(`(?m)^` + stamp + `execute: \w+: \d+/30 targets \(\d+%\)`)
	if n := len(line.FindAllString(stderr, -1)); n < 1 {
		t.Errorf("no progress line in a run longer than the interval:\n%s", stderr)
	}
	if strings.ContainsAny(stderr, "\r\x1b") {
		t.Errorf("a log got terminal redraws:\n%q", stderr)
	}
	if strings.Contains(stdout, "targets (") {
		t.Errorf("progress lines went to stdout:\n%s", stdout)
	}
}

func TestProgressIntervalMustNotBeNegative(t *testing.T) {
	_, stderr, code := runCommand(t, false, "status job-1 --progress-interval -1s")
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, "--progress-interval -1s") {
		t.Errorf("exit %d, stderr %q; want 2 naming the flag", code, stderr)
	}
}

// TestANoticeOnATTYGetsALineOfItsOwn: a stall, a stuck lease or a NATS reconnect printed while the
// bar is drawn ended up appended to the bar's line and was drawn over at its next redraw.
func TestANoticeOnATTYGetsALineOfItsOwn(t *testing.T) {
	ios, _, _, stderr := iostreams.Test()
	ios.SetStderrTTY(true)
	p := executecmd.NewExecuteProgress(ios)
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
