package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/slowtest"
)

// TestExecuteLogsAStallOnceWhenItBeginsAndOnceWhenItEnds: issue 18. With nobody consuming, execute
// said nothing on a non-TTY stderr until --settle-timeout stopped it; the stall is one timestamped
// line when it begins and one when outcomes land again, not a line per poll.
func TestExecuteLogsAStallOnceWhenItBeginsAndOnceWhenItEnds(t *testing.T) {
	slowtest.Require(t)
	// Waits on timeouts and restarts in a world of its own: runs beside the others.
	t.Parallel()
	w := newExecWorld(t)
	m := w.Shadowed(20, "job-cli-stall-log")
	p := startReplayctl(t, w.executeArgs("--settle-timeout", "40s", "--canary", "0")...)
	waitUntil(t, 30*time.Second, "the stall to be logged", func() bool {
		if !p.running() {
			t.Fatalf("execute exited before any stall was logged:\n%s", p.outputOf())
		}
		return strings.Contains(p.stderr.String(), "execute: stalled:")
	})
	time.Sleep(2 * time.Second) // more polls of the same stall, which must not log it again
	w.RunConsumer(w.NewConsumer(nil, nil))
	if code := p.wait(t, 60*time.Second); code != cmdutil.ExitOK {
		t.Fatalf("execute exited %d once a consumer started, want 0:\n%s", code, p.outputOf())
	}
	stderr := p.stderr.String()
	began := regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ execute: stalled: 20 published targets, no outcome for \d+s; the run stops at --settle-timeout 40s\. durable ` + m.Consumer + ``)
	ended := regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ execute: stall over after \d+s: outcomes land again`)
	if n := len(began.FindAllString(stderr, -1)); n != 1 {
		t.Errorf("the stall's beginning is logged %d times, want once:\n%s", n, stderr)
	}
	if n := len(ended.FindAllString(stderr, -1)); n != 1 {
		t.Errorf("the stall's end is logged %d times, want once:\n%s", n, stderr)
	}
}
