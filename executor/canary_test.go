package executor_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
)

// Issue 14: with no --rate and a window of 1,000, a job was wholly published before the first
// guard check. The canary publishes the first targets only and judges them before the rest.
func TestTheCanaryStopsABadJobAfterItsTargets(t *testing.T) {
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(200, "job-exec-canary-bad")
	// Under the new version one order in three is declined: a terminal business outcome.
	e.RunConsumer(e.NewConsumer(func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		if ev.Mode == consumer.ModeReplay && ev.ID[len(ev.ID)-1]%3 == 0 {
			return consumer.Result{}, consumer.Business(errors.New("card declined"))
		}
		return billingHandler(e)(ctx, ev, fx)
	}, nil))

	// No rate and a window far above the job: only the canary holds the publisher back.
	r, err := execute(e, options(m, func(o *executor.Options) { o.MaxInFlight = 10_000 }))

	stop, ok := errors.AsType[*executor.StopError](err)
	if !ok || stop.Stop.Kind != executor.StopErrorRate || !stop.Stop.Canary {
		t.Fatalf("want the error-rate guard on the canary, got %v", err)
	}
	if r.Preflight.Canary != 10 {
		t.Fatalf("canary %d, want 10 (1%% of 200, at least 10)", r.Preflight.Canary)
	}
	if published := e.StreamMessages(); published > 10 || r.Published > 10 {
		t.Fatalf("%d messages on the stream, %d published by the run: want at most the canary's 10", published, r.Published)
	}
	if rows := e.EffectCounts(m).Settled(); rows > 10 {
		t.Fatalf("%d targets processed, want at most the canary's 10", rows)
	}
	if !strings.Contains(stop.Stop.Message, "the canary of 10 targets stopped the run") {
		t.Errorf("the stop does not say the canary stopped it: %s", stop.Stop.Message)
	}
	if s := e.JobStatus(m.ID); s != "paused" {
		t.Fatalf("job %s, want paused by the guard", s)
	}
}

func TestACanaryThatPassesOpensTheRun(t *testing.T) {
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(40, "job-exec-canary-good")
	e.RunConsumer(e.NewConsumer(nil, nil))

	r := mustExecute(t, e, options(m, func(o *executor.Options) { o.Canary = 15 }))

	if r.Preflight.Canary != 15 || r.CanaryPassedAt.IsZero() || r.Final.Completed != 40 {
		t.Fatalf("canary %d passed at %v, final %+v: want a 15-target canary passed, then all 40 completed",
			r.Preflight.Canary, r.CanaryPassedAt, r.Final)
	}
	if !slices.Contains(auditActions(t, e, m.ID), "execute.canary_passed") {
		t.Error("the canary's pass is not in the audit log")
	}
}
