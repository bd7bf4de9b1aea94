package executor_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/internal/testenv/slowtest"
)

// TestAThrottledRunWithNoConsumerStopsOnTheSettleTimeoutNamingTheCause: the fleet is gone (the
// durable exists, nobody pulls) and the in-flight window is full, so the run sits throttled.
// The settle timeout still stops it, as a stall (exit 4), saying how many published targets
// have no outcome and what the durable shows; the job stays executing.
func TestAThrottledRunWithNoConsumerStopsOnTheSettleTimeoutNamingTheCause(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestAStallIsNoticedOnceWhenItBeginsAndOnceWhenItEnds: issue 18. A run with nobody consuming
// said nothing until --settle-timeout stopped it; the stall is reported once, well before the
// timeout, and its end once when a consumer starts and outcomes land, not at every poll.
func TestAStallIsNoticedOnceWhenItBeginsAndOnceWhenItEnds(t *testing.T) {
	slowtest.Require(t)
	// Waits on a cluster, a lease or a stall in a world of its own: runs beside the others.
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(20, "job-exec-stall-notice")
	var mu sync.Mutex
	var notices []executor.Notice
	began := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := execute(e, options(m, func(o *executor.Options) {
			o.Canary, o.SettleTimeout, o.PollInterval = executor.NoCanary, 20*time.Second, 100*time.Millisecond
			o.Notice = func(n executor.Notice) {
				mu.Lock()
				defer mu.Unlock()
				notices = append(notices, n)
				if n.Kind == executor.NoticeStall {
					close(began)
				}
			}
		}))
		done <- err
	}()
	select {
	case <-began:
	case err := <-done:
		t.Fatalf("the run ended before any stall was noticed: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("no stall noticed within 15s of a run nobody consumes (settle timeout 20s)")
	}
	e.RunConsumer(e.NewConsumer(nil, nil))
	if err := <-done; err != nil {
		t.Fatalf("execute once a consumer started: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	var kinds []executor.NoticeKind
	for _, n := range notices {
		kinds = append(kinds, n.Kind)
	}
	if !slices.Equal(kinds, []executor.NoticeKind{executor.NoticeStall, executor.NoticeStallOver}) {
		t.Fatalf("notices %v, want one stall and one stall-over: %+v", kinds, notices)
	}
	for _, want := range []string{"stalled: 20 published targets, no outcome for ", "--settle-timeout 20s", "durable billing"} {
		if !strings.Contains(notices[0].Message, want) {
			t.Errorf("the stall notice lacks %q: %s", want, notices[0].Message)
		}
	}
	if !strings.Contains(notices[1].Message, "outcomes land again") {
		t.Errorf("the stall-over notice does not say outcomes land: %s", notices[1].Message)
	}
}
