package executor_test

import (
	"context"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
)

// TestSettledOutcomesOpenTheWindowAsTheyLand: a small --max-in-flight and a long poll interval.
// Refreshed once per poll, the window let 5 targets through every 5 s (50 targets took about
// 50 s); outcomes landing must open it as they land, so a fast consumer finishes the job in a
// few seconds, and the window still holds: never more than 5 published targets without an
// outcome.
func TestSettledOutcomesOpenTheWindowAsTheyLand(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	const targets, window = 50, 5
	m := e.Shadowed(targets, "job-exec-window")
	e.RunConsumer(e.NewConsumer(nil, nil))
	// The stream's message count, read before the settled count, never overstates what is in
	// flight at that moment.
	ctx, stopSampling := context.WithCancel(e.Ctx)
	peak := make(chan int64, 1)
	go func() {
		var most int64
		defer func() { peak <- most }()
		stream, err := e.NATS.JS.Stream(ctx, exectest.Stream)
		if err != nil {
			return
		}
		for ctx.Err() == nil {
			info, err := stream.Info(ctx)
			var settled int64
			if err == nil {
				err = e.DB.QueryRow(ctx, `select count(*) from effects where consumer = $1 and effect_version = $2
					and state in ('completed', 'reconciled', 'uncertain')`, m.Consumer, m.EffectVersion.To).Scan(&settled)
			}
			if err == nil {
				most = max(most, int64(info.State.Msgs)-settled)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	started := time.Now()
	r := mustExecute(t, e, options(m, func(o *executor.Options) {
		o.MaxInFlight, o.PollInterval, o.Canary = window, 5*time.Second, executor.NoCanary
	}))
	took := time.Since(started)
	stopSampling()
	most := <-peak
	if most > window {
		t.Errorf("%d published targets had no outcome at once, over --max-in-flight %d", most, window)
	} else if most == 0 {
		t.Errorf("the in-flight sampler saw nothing in flight: it measured nothing")
	}
	if r.Final.Completed != targets {
		t.Fatalf("%d of %d completed", r.Final.Completed, targets)
	}
	// Once per poll, the run would take targets/window polls: 50 s.
	if took > 12*time.Second {
		t.Fatalf("%d targets through a window of %d with a 5 s poll took %s: the window opens only once per poll", targets, window, took.Round(time.Millisecond))
	}
	t.Logf("%d targets, --max-in-flight %d, poll interval 5s: %s, at most %d in flight", targets, window, took.Round(time.Millisecond), most)
}

// TestADrainedRunCountsTheLedgerWhenTheDurableIsEmpty: once every target is published, a
// re-count of the ledger cannot find the job settled while the durable still holds messages the
// consumers have not acknowledged (they acknowledge after the outcome is stored). Counting on the
// clock alone, the window re-counted every 100 ms while outcomes kept landing, each count a scan
// of the job's rows taken from the consumers still settling it; it now asks the durable and
// counts about once a second until the durable is empty, and then at once, so the run still ends
// as soon as the last outcome lands (the poll, every 5 s here, does not end it).
func TestADrainedRunCountsTheLedgerWhenTheDurableIsEmpty(t *testing.T) {
	t.Parallel()
	d := drainedRun(t, 5*time.Second)
	// The clock alone counted about every 100 ms of the drain; the durable allows one a second,
	// and the last when it empties.
	if most := int64(d.took/time.Second) + 3; d.settledCounts > most {
		t.Errorf("the window counted the ledger %d times in a drain of %s, more than %d", d.settledCounts, d.took, most)
	}
	if d.late > time.Second {
		t.Errorf("the run ended %s after the last outcome; the durable's empty backlog should have ended it at once", d.late)
	}
}

// TestADrainedRunReadsTheTargetStatusesOnce: after the publisher and the acknowledgement collector
// have ended, nothing changes the job's target statuses until the run finishes, so the polls
// (every 100 ms here) read them once and count only the ledger rows after that.
func TestADrainedRunReadsTheTargetStatusesOnce(t *testing.T) {
	t.Parallel()
	const poll = 100 * time.Millisecond
	d := drainedRun(t, poll)
	// Reading them on every poll would read them about 25 times in this drain. Once, and again
	// by each poll that began while the acknowledgement collector was still ending: one here on
	// a quiet machine, up to a few on a loaded one (a full suite once made it three, and a bound
	// of two failed it), never a fifth of the polls.
	if polls := int64(d.took / poll); d.targetCounts > max(2, polls/5) {
		t.Errorf("the polls read the job's target statuses %d times in a drain of %s (%d polls)", d.targetCounts, d.took, polls)
	}
}

// drain is what drainedRun measured between the last publish and the end of the run.
type drain struct {
	took                        time.Duration
	settledCounts, targetCounts int64
	late                        time.Duration
}

// drainedRun executes 40 targets published at once to one handler settling a target every
// 60 ms: a drain of about 2.5 s with an outcome landing at every re-count.
func drainedRun(t *testing.T, poll time.Duration) drain {
	t.Helper()
	e := exectest.New(t, exectest.Options{})
	const targets = 40
	m := e.Shadowed(targets, "job-exec-drained")
	charge := billing.Handler(e.Provider, time.Now)
	e.RunConsumer(e.NewConsumer(func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		time.Sleep(60 * time.Millisecond)
		return charge(ctx, ev, fx)
	}, func(c *consumer.Config) { c.Concurrency = 1 }))
	streamBefore := e.StreamMessages()
	done := make(chan *executor.Result, 1)
	go func() {
		r, err := execute(e, options(m, func(o *executor.Options) {
			o.MaxInFlight, o.PollInterval, o.Canary = targets+1, poll, executor.NoCanary
		}))
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	for e.StreamMessages() < streamBefore+targets {
		time.Sleep(5 * time.Millisecond)
	}
	r := <-done
	if r == nil {
		t.FailNow()
	}
	d := drain{settledCounts: r.DrainReads.SettledRecounts, targetCounts: r.DrainReads.TargetStatusReads}
	if r.Final.Completed != targets {
		t.Fatalf("%d of %d completed", r.Final.Completed, targets)
	}
	var lastOutcome time.Time
	if err := e.DB.QueryRow(e.Ctx, `select max(updated_at) from effects where consumer = $1 and effect_version = $2`,
		m.Consumer, m.EffectVersion.To).Scan(&lastOutcome); err != nil {
		t.Fatal(err)
	}
	d.took, d.late = lastOutcome.Sub(r.PublishFinishedAt), r.FinishedAt.Sub(lastOutcome)
	// SettledAt is when the run saw the last outcome, before it recorded the end.
	if r.SettledAt.Before(lastOutcome) || r.SettledAt.After(r.FinishedAt) {
		t.Errorf("settled at %s: not between the last outcome (%s) and the end of the run (%s)", r.SettledAt, lastOutcome, r.FinishedAt)
	}
	if d.took < 1500*time.Millisecond {
		t.Fatalf("the drain took %s: too short to tell a re-count a second from one every 100 ms", d.took)
	}
	t.Logf("drain of %s: %d ledger re-counts, %d reads of the target statuses; the run ended %s after the last outcome",
		d.took.Round(time.Millisecond), d.settledCounts, d.targetCounts, d.late.Round(time.Millisecond))
	return d
}
