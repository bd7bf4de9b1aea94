package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
)

// Issue 14: a guard passed on the last targets of a job said "fix the cause, then resume" about a
// job that was completed and that resume refused. The job completes, and the run says so, exit 4.
func TestAGuardPassedAtTheEndReportsACompletedJob(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	// Ten targets, under the guards' minimum sample: the error ratio is judged once, at the end.
	m := w.Shadowed(10, "job-cli-guard-at-end")
	declined := exectest.EventID(9)
	charge := billing.Handler(w.Provider, time.Now)
	w.RunConsumer(w.NewConsumer(func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		if ev.Mode == consumer.ModeReplay && ev.ID == declined {
			return consumer.Result{}, consumer.Business(errors.New("card declined"))
		}
		return charge(ctx, ev, fx)
	}, nil))

	stdout, stderr, code := w.replayctl(t, "execute --yes "+w.ManifestPath())
	if code != cmdutil.ExitGuardStopped {
		t.Fatalf("exit %d, want %d:\n%s\n%s", code, cmdutil.ExitGuardStopped, stdout, stderr)
	}
	out := stdout + stderr
	for _, want := range []string{"execute of job " + m.ID + ": completed", "completed, but the guard's threshold was passed",
		"1 of 10 settled targets failed", "nothing to resume",
		// The table says where the call budget came from: the verdict's measured calls.
		"external call budget\t22 (20 calls measured by shadow verdict #"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "then resume") {
		t.Errorf("the output offers a resume to a completed job:\n%s", out)
	}
	if s := w.JobStatus(m.ID); s != "completed" {
		t.Fatalf("job %s, want completed", s)
	}
}
