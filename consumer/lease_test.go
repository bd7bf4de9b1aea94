package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

func TestHeartbeatKeepsAShortLeaseAliveAndOthersOut(t *testing.T) {
	e := newEnv(t)
	e.p.block, e.p.entered = make(chan struct{}), make(chan struct{}, 1)
	short := func(owner string) func(*consumer.Config) {
		return func(cfg *consumer.Config) {
			cfg.Lease, cfg.Heartbeat, cfg.Owner = 600*time.Millisecond, 150*time.Millisecond, owner
		}
	}
	a, b := e.newConsumer(short("instance-a")), e.newConsumer(short("instance-b"))
	cons := e.durable(a)
	payload := orderJSON("acct-1", 250)
	e.publish("e1", payload, nil)
	first := e.next(cons)
	outcome := make(chan consumer.Outcome, 1)
	go func() { outcome <- a.Process(e.ctx, first) }()
	<-e.p.entered

	// Two and a half leases after the claim the lease is still live: only heartbeats can do that.
	var live bool
	var sinceClaim, sinceHeartbeat time.Duration
	pgtest.WaitFor(t, 5*time.Second, func() (bool, error) {
		err := e.db.QueryRow(e.ctx, `select lease_expires_at > now(), now() - created_at, now() - heartbeat_at from effects`).
			Scan(&live, &sinceClaim, &sinceHeartbeat)
		return sinceClaim > 1500*time.Millisecond, err
	})
	if !live || sinceHeartbeat > 600*time.Millisecond {
		t.Fatalf("%s after the claim: lease live %v, last heartbeat %s ago", sinceClaim, live, sinceHeartbeat)
	}

	// A second instance gets a copy of the same event meanwhile and must keep its hands off.
	e.publish("e1", payload, nil)
	out := e.processNext(b, cons, consumer.OutcomeInProgress)
	if out.Err == nil {
		t.Fatal("in progress without saying who holds the lease")
	}

	close(e.p.block)
	if got := <-outcome; got.Kind != consumer.OutcomeCompleted {
		t.Fatalf("holder's outcome %s (%v)", got.Kind, got.Err)
	}
	// The copy comes back after the lease's remaining time and is now a duplicate.
	e.processNext(b, cons, consumer.OutcomeDuplicate)
	e.settled(cons)
	if n := e.p.calls.Load(); n != 1 {
		t.Fatalf("provider calls %d, want 1", n)
	}
}

// leaseLeftBy stands in for an instance that claimed e1 and then crashed, having started calls
// external calls first.
func leaseLeftBy(e *env, payload string, calls int) {
	e.t.Helper()
	key := ledger.EffectKey{Consumer: consumerName, EventID: "e1", EffectVersion: 1}
	if _, err := e.ledger().EffectsClaim(e.ctx, ledger.EffectClaim{Key: key, RequestHash: fingerprint.Payload([]byte(payload)),
		RequestHashAlg: fingerprint.Algorithm, Owner: "crashed-instance", Lease: time.Minute}); err != nil {
		e.t.Fatal(err)
	}
	for n := range calls {
		if _, err := e.ledger().EffectsCallStarted(e.ctx, key, "crashed-instance", n+1); err != nil {
			e.t.Fatal(err)
		}
	}
	if e.fake != nil {
		e.fake.LapseLeases()
		return
	}
	ledgertest.LapseLeases(e.t, e.db)
}

func TestALapsedLeaseAfterACallStartedBecomesUncertain(t *testing.T) {
	e := newFakeEnv(t)
	c := e.newConsumer(nil)
	cons := e.durable(c)
	payload := orderJSON("acct-1", 250)
	leaseLeftBy(e, payload, 1)
	e.publish("e1", payload, nil)

	e.processNext(c, cons, consumer.OutcomeUncertain)
	e.settled(cons)
	if n := e.p.calls.Load(); n != 0 {
		t.Fatalf("the provider was called %d times for an event whose earlier call may have gone through", n)
	}
	if r := e.row("e1", 1); r.State != "uncertain" || r.LastError == "" {
		t.Fatalf("row %+v", r)
	}
}

func TestALapsedLeaseBeforeAnyCallIsTakenOver(t *testing.T) {
	e := newFakeEnv(t)
	c := e.newConsumer(nil)
	cons := e.durable(c)
	payload := orderJSON("acct-1", 250)
	leaseLeftBy(e, payload, 0)
	e.publish("e1", payload, nil)

	e.processNext(c, cons, consumer.OutcomeCompleted)
	e.settled(cons)
	if r := e.row("e1", 1); r.State != "completed" || r.Attempts != 2 || r.EffectCount != 1 || r.LeaseOwner != "" {
		t.Fatalf("row %+v", r)
	}
	if n := e.p.calls.Load(); n != 1 {
		t.Fatalf("provider calls %d, want 1", n)
	}
}

func TestALostLeaseStopsTheHandlerAndItsCalls(t *testing.T) {
	e := newEnv(t)
	entered := make(chan struct{})
	c := e.newConsumer(func(cfg *consumer.Config) {
		cfg.Lease, cfg.Heartbeat = time.Second, 50*time.Millisecond
		cfg.Handler = func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
			close(entered)
			<-ctx.Done()
			if cause := context.Cause(ctx); !errors.Is(cause, consumer.ErrLeaseLost) {
				return consumer.Result{}, fmt.Errorf("cancelled by %v, not by the lost lease", cause)
			}
			// A handler that ignores the cancellation still cannot make the call.
			_, err := fx.Call(context.WithoutCancel(ctx), "charge", "acct-1", e.p.charge)
			return consumer.Result{}, err
		}
	})
	cons := e.durable(c)
	e.publish("e1", orderJSON("acct-1", 250), nil)
	msg := e.next(cons)
	outcome := make(chan consumer.Outcome, 1)
	go func() { outcome <- c.Process(e.ctx, msg) }()
	<-entered
	ledgertest.TakeOverLeases(t, e.db, "instance-b", "e1")

	out := <-outcome
	if out.Kind != consumer.OutcomeRetrying || !errors.Is(out.Err, consumer.ErrLeaseLost) {
		t.Fatalf("outcome %s (%v), want retrying because the lease was lost", out.Kind, out.Err)
	}
	if n := e.p.calls.Load(); n != 0 {
		t.Fatalf("the provider was called %d times without the lease", n)
	}
	if r := e.row("e1", 1); r.State != "processing" || r.LeaseOwner != "instance-b" || r.CallsStarted != 0 {
		t.Fatalf("the new holder's row was touched: %+v", r)
	}
}

// Two handlings of one event in one instance: a redelivery (after a NATS restart, of a message
// not yet acknowledged) finds the first handling's lease lapsed before any call (its heartbeats
// failed through a ledger failover) and takes it over. The first handling must then fail its
// owner checks, not pass them under the instance's name and make its call beside the second's
// (the fault soak charged an order twice this way, issue 33).
func TestATakeOverInTheSameInstanceLeavesTheFirstHandlingWithoutItsLease(t *testing.T) {
	e := newEnv(t)
	e.p.block, e.p.entered = make(chan struct{}), make(chan struct{}, 2)
	gate, held := make(chan struct{}), make(chan struct{}, 1)
	charge := chargeHandler(e.p)
	var handlings atomic.Int32
	c := e.newConsumer(func(cfg *consumer.Config) {
		// No heartbeat comes while the test runs: the lapse is the test's to make.
		cfg.Lease, cfg.Heartbeat = time.Minute, 29*time.Second
		cfg.Handler = func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
			if handlings.Add(1) == 1 {
				held <- struct{}{}
				<-gate // the first handling is held before its call
			}
			return charge(ctx, ev, fx)
		}
	})
	cons := e.durable(c)
	payload := orderJSON("acct-1", 250)
	e.publish("e1", payload, nil)
	first := e.next(cons)
	outcomes := make(chan consumer.Outcome, 2)
	go func() { outcomes <- c.Process(e.ctx, first) }()
	<-held
	ledgertest.LapseLeases(t, e.db, "e1")
	// The redelivery takes the lapsed lease over and is in the provider's call.
	e.publish("e1", payload, nil)
	second := e.next(cons)
	go func() { outcomes <- c.Process(e.ctx, second) }()
	<-e.p.entered
	// The first handling goes on: its call must be refused, the lease being the second's.
	close(gate)
	var firstOut consumer.Outcome
	select {
	case firstOut = <-outcomes:
	case <-e.p.entered:
		close(e.p.block)
		t.Fatal("the first handling made its call beside the second's: both charged under one instance's lease")
	}
	close(e.p.block)
	secondOut := <-outcomes
	if !errors.Is(firstOut.Err, consumer.ErrLeaseLost) || secondOut.Kind != consumer.OutcomeCompleted {
		t.Fatalf("first handling %s (%v), second %s (%v): want the first refused its call (lease lost), the second completed",
			firstOut.Kind, firstOut.Err, secondOut.Kind, secondOut.Err)
	}
	if n := e.p.calls.Load(); n != 1 {
		t.Fatalf("provider calls %d, want 1: two handlings of one instance both charged", n)
	}
}
