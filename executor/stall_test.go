package executor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
)

// TestAThrottledRunWithNoConsumerStopsOnTheSettleTimeoutNamingTheCause: the fleet is gone (the
// durable exists, nobody pulls) and the in-flight window is full, so the run sits throttled.
// The settle timeout still stops it, as a stall (exit 4), saying how many published targets
// have no outcome and what the durable shows; the job stays executing.
func TestAThrottledRunWithNoConsumerStopsOnTheSettleTimeoutNamingTheCause(t *testing.T) {
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(30, "job-exec-stall-throttled")
	// A consumer instance ran once (the durable exists) and is gone.
	if _, err := e.NewConsumer(nil, nil).EnsureDurable(e.Ctx); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.Ctx, 30*time.Second)
	defer cancel()
	var states []string
	started := time.Now()
	_, err := executor.Execute(ctx, e.NATS.JS, e.Store, options(m, func(o *executor.Options) {
		o.MaxInFlight, o.Canary, o.SettleTimeout = 10, executor.NoCanary, time.Second
		o.Progress = func(p executor.Progress) { states = append(states, p.State) }
	}))
	stop, ok := errors.AsType[*executor.StopError](err)
	if !ok || stop.Stop.Kind != executor.StopStalled {
		t.Fatalf("want a stall after %s, got %v", time.Since(started), err)
	}
	for _, want := range []string{"10 published targets, no outcome for 1s", "is any consumer instance running?",
		"durable billing has 0 active pull requests", "10 messages pending", "execute again"} {
		if !strings.Contains(stop.Stop.Message, want) {
			t.Errorf("the stall message lacks %q: %s", want, stop.Stop.Message)
		}
	}
	if last := states[len(states)-1]; last != "throttled" {
		t.Errorf("the run's last state is %q, want throttled (the case the stall must cover)", last)
	}
	if e.JobStatus(m.ID) != "executing" {
		t.Fatalf("a stalled job is %s, want executing", e.JobStatus(m.ID))
	}
}

// TestAPublishingRunWithNoConsumerStopsOnTheSettleTimeout: a wide window and a slow rate keep the
// run publishing long after the settle timeout, with nobody consuming. Publishing more is not
// progress: the run stops as a stall while it is still publishing.
func TestAPublishingRunWithNoConsumerStopsOnTheSettleTimeout(t *testing.T) {
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(40, "job-exec-stall-publishing")
	var states []string
	r, err := execute(e, options(m, func(o *executor.Options) {
		o.Rate, o.Canary, o.SettleTimeout = 10, executor.NoCanary, time.Second
		o.Progress = func(p executor.Progress) { states = append(states, p.State) }
	}))
	stop, ok := errors.AsType[*executor.StopError](err)
	if !ok || stop.Stop.Kind != executor.StopStalled {
		t.Fatalf("want a stall while publishing, got %v", err)
	}
	if last := states[len(states)-1]; last != "publishing" || r.Published >= 40 {
		t.Errorf("stopped in state %q with %d of 40 published: want it stopped while publishing", last, r.Published)
	}
	if !strings.Contains(stop.Stop.Message, "durable billing does not exist on stream BILLING") {
		t.Errorf("the stall message does not say the durable is missing: %s", stop.Stop.Message)
	}
}
