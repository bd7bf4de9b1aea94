package executor_test

import (
	"errors"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/internal/testenv/natstest"
	"github.com/replayctl/replayctl/internal/testenv/slowtest"
)

// TestAFleetOfThreeOnAClusterRidesThroughAStepDownAndAServerKill holds issue 20's scenario: a
// 3-server cluster with R3 streams, 3 billing instances sharing the durable (each on another
// server first), a replay at a rate; the durable's leader steps down, then the server the first
// instance is on is killed and later restarted. Every order is charged exactly once, and the
// run completes (a run the outage stopped is run again, as an operator would).
func TestAFleetOfThreeOnAClusterRidesThroughAStepDownAndAServerKill(t *testing.T) {
	slowtest.Require(t)
	// Waits on a cluster, a lease or a stall in a world of its own: runs beside the others.
	t.Parallel()
	e := exectest.New(t, exectest.Options{Cluster: true})
	const orders = 300
	m := e.Shadowed(orders, "job-exec-fleet")
	for i := range 3 {
		nc, _ := e.Cluster.Connect(t, i)
		e.RunConsumer(e.NewConsumer(nil, func(cfg *consumer.Config) { cfg.Conn = nc }))
	}
	completed := func() int64 {
		return e.QueryInt(`select count(*) from effects where consumer = $1 and state = 'completed' and effect_version = 2`, m.Consumer)
	}
	faults := make(chan error, 1)
	go func() {
		faults <- func() error {
			if !eventually(func() bool { return completed() >= 60 }) {
				return errors.New("60 orders were not charged within a minute")
			}
			if err := natstest.StepDownConsumer(e.Ctx, e.NATS.Conn, exectest.Stream, m.Consumer); err != nil {
				return err
			}
			if !eventually(func() bool { return completed() >= 150 }) {
				return errors.New("150 orders were not charged within a minute")
			}
			e.Cluster.Kill(0)
			time.Sleep(2 * time.Second)
			return e.Cluster.Start(0)
		}()
	}()
	started := time.Now()
	opts := options(m, func(o *executor.Options) { o.Rate, o.SettleTimeout = 200, 20*time.Second })
	_, err := execute(e, opts)
	runs := 1
	for ; err != nil && runs < 3; runs++ {
		if _, stopped := errors.AsType[*executor.StopError](err); stopped {
			t.Fatalf("run %d stopped: %v", runs, err)
		}
		t.Logf("run %d ended with %v; running execute again", runs, err)
		_, err = execute(e, opts)
	}
	if err != nil {
		t.Fatalf("execute after %d runs: %v", runs, err)
	}
	if err := <-faults; err != nil {
		t.Fatal(err)
	}
	if dups := e.DuplicateCharges(); len(dups) > 0 {
		t.Fatalf("charged more than once: %v", dups)
	}
	if n := len(e.Provider.ChargedOrders()); n != orders {
		t.Fatalf("%d orders charged, want %d", n, orders)
	}
	t.Logf("%d orders charged once each in %s over %d run(s), through a step-down and a server kill", orders, time.Since(started).Round(time.Millisecond), runs)
}

// eventually polls cond for up to a minute, from any goroutine.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}
