package executor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
)

// A replay the consumer dead-letters again (its deliveries used up) is a failed target with why,
// and the job finishes: before, its row stayed received with nothing left to deliver it and
// every execute waited out its settle timeout, for ever (found by the fault soak, issue 33).
func TestAReplayDeadLetteredAgainFailsItsTargetAndTheJobFinishes(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(3, "job-exec-deadlettered-again")
	poisoned := exectest.EventID(1)
	charge := billingHandler(e)
	e.RunConsumer(e.NewConsumer(func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		if ev.ID == poisoned {
			return consumer.Result{}, consumer.NotExecuted(errors.New("payment provider unreachable"))
		}
		return charge(ctx, ev, fx)
	}, func(cfg *consumer.Config) { cfg.MaxDeliver, cfg.RetryBackoff = 2, 10*time.Millisecond }))
	e.WaitPulling()

	r, err := execute(e, options(m, func(o *executor.Options) { o.SettleTimeout = 20 * time.Second }))
	// 1 failed of 3 passes the error-ratio guard, which reports it once every target settled.
	if stop, ok := errors.AsType[*executor.StopError](err); err != nil && (!ok || !stop.Stop.Completed) {
		t.Fatalf("execute: %v (a dead-lettered replay must settle its target, not stall the job)", err)
	}
	if len(r.Failed) != 1 || r.Failed[0].EventID != poisoned || !strings.Contains(r.Failed[0].LastError, "dead-lettered again by billing after 2 deliveries") {
		t.Fatalf("failed targets %+v, want %s dead-lettered again, with why", r.Failed, poisoned)
	}
	if r.Final.Completed != 2 || r.Final.Failed != 1 || r.Final.Remaining != 0 {
		t.Fatalf("final counts %+v, want 2 completed and 1 failed", r.Final)
	}
	if got := e.JobStatus(m.ID); got != "completed" {
		t.Fatalf("job status %s, want completed", got)
	}
}
