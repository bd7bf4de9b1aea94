package executor_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
)

// Issue 14: with no --rate and a window of 1,000, a job was wholly published before the first
// guard check. The canary publishes the first targets only and judges them before the rest.
func TestTheCanaryStopsABadJobAfterItsTargets(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestTheCanaryOpensWhenItsLastOutcomeLands: every target but the canary waits for it, so the
// run must open as soon as the canary's last outcome is in the ledger. Counting on the idle clock
// (a re-count that found nothing new doubled the gap to the next, up to a second), a canary that
// took 1.7 s to settle was counted at 1.575 s and 2.575 s and opened about 0.9 s late: every
// run paid that wait between its canary and the rest (about 0.6 s of a 4.7 s run of 18,000
// targets). The durable says when the consumers have acknowledged every message, and the run
// counts then.
func TestTheCanaryOpensWhenItsLastOutcomeLands(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	const targets, canary = 30, 10
	m := e.Shadowed(targets, "job-exec-canary-prompt")
	release := time.Now().Add(1700 * time.Millisecond)
	charge := billingHandler(e)
	e.RunConsumer(e.NewConsumer(func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		time.Sleep(time.Until(release))
		return charge(ctx, ev, fx)
	}, func(c *consumer.Config) { c.Concurrency = canary }))

	// A 5 s poll: only the window's re-counts can open the canary in time.
	r := mustExecute(t, e, options(m, func(o *executor.Options) {
		o.Canary, o.PollInterval, o.MaxInFlight = canary, 5*time.Second, 10_000
	}))

	if r.CanaryPassedAt.IsZero() || r.Final.Completed != targets {
		t.Fatalf("canary passed at %v, final %+v: want the canary passed, then all %d completed", r.CanaryPassedAt, r.Final, targets)
	}
	// Every target after the canary is published after it passed, so the canary's outcomes are
	// the ones that landed before.
	var lastCanaryOutcome time.Time
	var canaryOutcomes int
	if err := e.DB.QueryRow(e.Ctx, `select max(updated_at), count(*) from effects
		where consumer = $1 and effect_version = $2 and updated_at <= $3`,
		m.Consumer, m.EffectVersion.To, r.CanaryPassedAt).Scan(&lastCanaryOutcome, &canaryOutcomes); err != nil {
		t.Fatal(err)
	}
	if canaryOutcomes != canary {
		t.Fatalf("%d outcomes before the canary passed, want the canary's %d", canaryOutcomes, canary)
	}
	if late := r.CanaryPassedAt.Sub(lastCanaryOutcome); late > 450*time.Millisecond {
		t.Errorf("the canary passed %s after its last outcome landed; the durable's empty backlog should have opened it at once", late.Round(time.Millisecond))
	} else {
		t.Logf("the canary passed %s after its last outcome", late.Round(time.Millisecond))
	}
}
