package executor_test

import (
	"context"
	"testing"
	"time"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
)

// TestSettledOutcomesOpenTheWindowAsTheyLand: a small --max-in-flight and a long poll interval.
// Refreshed once per poll, the window let 5 targets through every 5 s (50 targets took about
// 50 s); outcomes landing must open it as they land, so a fast consumer finishes the job in a
// few seconds, and the window still holds: never more than 5 published targets without an
// outcome.
func TestSettledOutcomesOpenTheWindowAsTheyLand(t *testing.T) {
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
