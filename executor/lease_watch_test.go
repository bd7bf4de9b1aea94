package executor_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/internal/testenv/slowtest"
	"github.com/replayctl/replayctl/ledger"
)

// TestAStuckLeaseIsNoticedOnceWhenItBeginsAndOnceWhenItEnds: issue 18. A consumer instance that
// died holding a lease of the job left the run waiting with nothing said; the lapsed lease is
// reported once with its owner and age, and once when it is live again, not at every poll.
func TestAStuckLeaseIsNoticedOnceWhenItBeginsAndOnceWhenItEnds(t *testing.T) {
	slowtest.Require(t)
	// Waits on a cluster, a lease or a stall in a world of its own: runs beside the others.
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(10, "job-exec-stuck-lease")
	var mu sync.Mutex
	var notices []executor.Notice
	stuck := make(chan struct{})
	published := make(chan struct{})
	var once, publishedOnce sync.Once
	done := make(chan error, 1)
	go func() {
		_, err := execute(e, options(m, func(o *executor.Options) {
			o.Canary, o.SettleTimeout, o.PollInterval = executor.NoCanary, 6*time.Second, 100*time.Millisecond
			o.Progress = func(p executor.Progress) {
				if p.Remaining < p.Targets || p.State == "waiting" {
					publishedOnce.Do(func() { close(published) })
				}
			}
			o.Notice = func(n executor.Notice) {
				mu.Lock()
				defer mu.Unlock()
				notices = append(notices, n)
				if n.Kind == executor.NoticeLeaseStuck {
					once.Do(func() { close(stuck) })
				}
			}
		}))
		done <- err
	}()
	select {
	case <-published:
	case <-time.After(10 * time.Second):
		t.Fatal("execute did not publish within 10s")
	}
	// An instance claims a target and dies: its lease lapses with the row processing.
	key := ledger.EffectKey{Consumer: m.Consumer, EventID: m.EventIDs[0], EffectVersion: m.EffectVersion.To}
	if ok, err := ledger.EffectsClaim(e.Ctx, e.DB, ledger.EffectClaim{Key: key, RequestHash: "sha256:x", RequestHashAlg: "canonical-json-v1",
		Owner: "host-dead", Lease: time.Millisecond, JobID: m.ID}); err != nil || !ok {
		t.Fatalf("claim: %t %v", ok, err)
	}
	select {
	case <-stuck:
	case err := <-done:
		t.Fatalf("the run ended before the stuck lease was noticed: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("no stuck lease noticed within 5s")
	}
	time.Sleep(time.Second) // more checks of the same lease, which must not report it again
	// The instance was only slow: it renews its lease.
	if ok, err := ledger.EffectsHeartbeat(e.Ctx, e.DB, key, "host-dead", time.Hour); err != nil || !ok {
		t.Fatalf("heartbeat: %t %v", ok, err)
	}
	err := <-done
	if stop, ok := errors.AsType[*executor.StopError](err); !ok || stop.Stop.Kind != executor.StopStalled {
		t.Fatalf("want the run to stop as a stall (nobody consumes), got %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	var began, ended []string
	for _, n := range notices {
		switch n.Kind {
		case executor.NoticeLeaseStuck:
			began = append(began, n.Message)
		case executor.NoticeLeaseFreed:
			ended = append(ended, n.Message)
		}
	}
	if len(began) != 1 || len(ended) != 1 {
		t.Fatalf("stuck lease noticed %d times and its end %d times, want once each: %+v", len(began), len(ended), notices)
	}
	for _, want := range []string{"consumer instance host-dead holds 1 in-progress targets of job " + m.ID, "lease lapsed", "the oldest leased ", "s ago", "replayctl reconcile"} {
		if !strings.Contains(began[0], want) {
			t.Errorf("the stuck lease notice lacks %q: %s", want, began[0])
		}
	}
	if !strings.Contains(ended[0], "host-dead holds no lapsed lease") {
		t.Errorf("the end notice: %s", ended[0])
	}
}
