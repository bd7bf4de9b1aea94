package statuscmd

import (
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/cli/clitest"
)

func TestStatusFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *StatusOptions
	err := clitest.Run(NewCmdStatus(clitest.Factory(t), func(o *StatusOptions) error { got = o; return nil }), "job-1", "--watch", "--interval", "5s")
	if err != nil || got == nil || got.JobID != "job-1" || !got.Watch || got.Interval != 5*time.Second {
		t.Fatalf("status --watch: %v, options %+v", err, got)
	}
}

// The watch line and the guards it shows, rendered from literal figures: a run state from before
// --max-retrying-ratio has no ratio to put the retrying targets against, and shows none.
func TestWatchLineShowsTheRetryingTargetsAgainstTheGuard(t *testing.T) {
	r := &executor.StatusReport{JobID: "job-1", Counts: executor.Progress{Targets: 100, Completed: 10, InProgress: 50, Retrying: 41,
		Remaining: 90, State: "paused"}, Executor: &executor.RunState{Guards: &executor.Guards{MaxErrorRatio: 0.05, MaxUncertain: 10, MaxRetryingRatio: 0.8}}}
	line := watchLine(r, time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC))
	for _, want := range []string{"10/100 settled", "50 in progress (41 retrying), 90 remaining"} {
		if !strings.Contains(line, want) {
			t.Errorf("watch line %q lacks %q", line, want)
		}
	}
	if got, want := guardsText(r), "retrying 41 (max 80% of those in flight)"; !strings.Contains(got, want) {
		t.Errorf("guards %q lack %q", got, want)
	}
	r.Executor.Guards.MaxRetryingRatio = 0
	if got := guardsText(r); strings.Contains(got, "retrying") {
		t.Errorf("guards of a run state without the ratio: %q", got)
	}
}
