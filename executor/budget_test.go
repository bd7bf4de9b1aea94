package executor_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
)

// Issue 14: the plan assumed 1 call per target, the shadow measured 2 and passed, and execute
// enforced the plan's figure after every call was made. The budget is the verdict's measured
// calls, and it is the shadow's figure that the run is held to.
func TestTheBudgetIsTheVerdictsMeasuredCalls(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	e.Seed(30)
	m := e.Plan("job-exec-budget-source")
	r := e.Shadow(m)
	e.RunConsumer(e.NewConsumer(nil, nil))

	res := mustExecute(t, e, options(m, nil))

	b := res.Preflight.Budget
	if b.Source != executor.BudgetFromVerdict || b.VerdictID == 0 || b.Calls != r.Totals.ShadowExternalCalls || b.Calls != 60 ||
		b.Budget != 66 || res.Preflight.CallBudget != 66 || b.MaxPerTarget != 2 {
		t.Fatalf("budget %+v, call budget %d: want the verdict's 60 measured calls + 10%% = 66, at most 2 per target", b, res.Preflight.CallBudget)
	}
	if !strings.Contains(b.Describe(), "measured by shadow verdict #"+strconv.FormatInt(b.VerdictID, 10)) {
		t.Errorf("the budget does not say where it came from: %s", b.Describe())
	}
	if res.Final.Completed != 30 || res.Final.ExternalCalls != 60 {
		t.Fatalf("final %+v: want every target completed within the budget", res.Final)
	}
}

// The executor never has more targets in flight than the remaining budget covers: with a window
// far above the job, a run starts at most the budget plus one target's calls.
func TestTheBudgetHoldsBeforeTheCalls(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	const n = 300
	e.Seed(n)
	m := e.Plan("job-exec-budget-window")
	// The shadow sees 2 calls for the first 50 orders and none for the others (say a cache the
	// shadow path trusts): it measures 100 calls. Executed, every order makes 2.
	first50 := map[string]bool{}
	for i := range 50 {
		first50[exectest.EventID(i)] = true
	}
	charge := billingHandler(e)
	r := e.ShadowWith(m, func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		if ev.Mode == consumer.ModeShadow && !first50[ev.ID] {
			return consumer.Result{Body: map[string]string{"status": "charged"}}, nil
		}
		return charge(ctx, ev, fx)
	})
	if r.Totals.ShadowExternalCalls != 100 || r.Totals.MaxCallsPerTarget != 2 {
		t.Fatalf("shadow totals %+v: want 100 calls measured, 2 at most per target", r.Totals)
	}
	e.RunConsumer(e.NewConsumer(nil, nil))

	// No canary, no rate and a window 30 times the job: only the budget holds the publisher.
	res, err := execute(e, options(m, func(o *executor.Options) {
		o.MaxInFlight, o.Canary, o.Guards.MaxCallsOver = 10_000, executor.NoCanary, 0
	}))

	stop, ok := errors.AsType[*executor.StopError](err)
	if !ok || stop.Stop.Kind != executor.StopCallBudget {
		t.Fatalf("want the call budget guard, got %v", err)
	}
	if res.Preflight.CallBudget != 100 {
		t.Fatalf("call budget %d, want the verdict's 100", res.Preflight.CallBudget)
	}
	if calls := e.Provider.Calls(""); calls > 100+2 {
		t.Fatalf("%d provider calls made, want at most the budget of 100 + one target's 2", calls)
	}
	if published := e.StreamMessages(); published > 51 {
		t.Fatalf("%d targets published, want at most the 50 the budget covers, and one", published)
	}
	if e.JobStatus(m.ID) != "paused" {
		t.Fatalf("job %s, want paused by the budget", e.JobStatus(m.ID))
	}
}
