package executor_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/job"
)

// A replay into a provider that is down stops publishing once most targets in flight are
// retrying, instead of filling the window and waiting out --settle-timeout; the job is paused,
// the targets in flight settle once the provider is back, and resume charges the rest once each.
func TestARunIntoAProviderThatIsDownPausesAndResumeChargesEachOnce(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(80, "job-exec-provider-down")
	var down atomic.Bool
	down.Store(true)
	charge := billingHandler(e)
	e.RunConsumer(e.NewConsumer(func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		if ev.Mode == consumer.ModeReplay && down.Load() {
			return consumer.Result{}, errors.New("payments-api: connection refused")
		}
		return charge(ctx, ev, fx)
	}, nil))

	r, err := execute(e, options(m, func(o *executor.Options) { o.MaxInFlight = 30 }))

	stop, ok := errors.AsType[*executor.StopError](err)
	if !ok || stop.Stop.Kind != executor.StopRetrying {
		t.Fatalf("want the retrying guard, got %v", err)
	}
	if r.Published >= 80 || e.Provider.Calls("") != 0 {
		t.Fatalf("published %d, provider calls %d: want the run stopped before the rest, nothing charged", r.Published, e.Provider.Calls(""))
	}
	if e.JobStatus(m.ID) != "paused" {
		t.Fatalf("job %s, want paused by the guard", e.JobStatus(m.ID))
	}
	if st, err := executor.Status(e.Ctx, e.Store, m.ID); err != nil || st.Counts.Retrying < 10 || st.Counts.Retrying > st.Counts.InProgress {
		t.Fatalf("status while the provider is down: %+v, %v; want the retrying targets among those in progress", st.Counts, err)
	}

	down.Store(false)
	if _, err := job.Resume(e.Ctx, e.Store, job.Control{JobID: m.ID, Actor: "erin"}); err != nil {
		t.Fatal(err)
	}
	final := mustExecute(t, e, options(m, nil))
	if charges := e.Provider.Calls(billing.EffectCharge); final.Final.Completed != 80 || charges != 80 || len(e.DuplicateCharges()) != 0 {
		t.Fatalf("after resume: %+v, %d charges, duplicates %v", final.Final, charges, e.DuplicateCharges())
	}
}
