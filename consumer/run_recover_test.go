package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/testenv/natstest"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/internal/testenv/slowtest"
	"github.com/replayctl/replayctl/protocol"
)

// newClusterEnv is newEnv on a 3-server cluster with R3 streams; its connection (for publishing
// and inspecting) picks a server at random.
func newClusterEnv(t *testing.T) (*env, *natstest.Cluster) {
	t.Helper()
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	store := pgtest.Ledger(t)
	cluster := natstest.StartCluster(t, 3)
	nc, js := cluster.Connect(t, -1)
	for name, subjects := range map[string][]string{"ORDERS": {"orders.>"}, "DLQ": {"dlq.>"}} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: subjects, Replicas: 3}); err != nil {
			t.Fatalf("create R3 stream %s: %v", name, err)
		}
	}
	return &env{t: t, ctx: ctx, store: store, db: pgtest.Pool(t, store), nats: &natstest.Env{Conn: nc, JS: js}, p: &provider{}}, cluster
}

// publishThroughOutage publishes like env.publish, retrying while the cluster elects leaders;
// Nats-Msg-Id keeps a retried publish from storing the message twice.
func (e *env) publishThroughOutage(eventID, payload string) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		msg := nats.NewMsg(orderSubject)
		msg.Data = []byte(payload)
		msg.Header.Set(protocol.HeaderEventID, eventID)
		ctx, cancel := context.WithTimeout(e.ctx, 2*time.Second)
		_, err := e.nats.JS.PublishMsg(ctx, msg, jetstream.WithMsgID(eventID))
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("publish %s: the cluster did not take it within 30s: %v", eventID, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRunRidesThroughAServerKillAndALeaderStepDown: the consumer is connected to the server that
// leads its durable; that server is killed, and later the new leader steps down. Run neither
// returns nor stops: every order published after each fault is charged, once.
func TestRunRidesThroughAServerKillAndALeaderStepDown(t *testing.T) {
	slowtest.Require(t)
	e, cluster := newClusterEnv(t)
	reg := prometheus.NewRegistry()
	probe := e.newConsumer(nil)
	info, err := e.durable(probe).Info(e.ctx)
	if err != nil || info.Cluster == nil {
		t.Fatalf("durable info: %v (%+v)", err, info)
	}
	leader := cluster.Index(info.Cluster.Leader)
	consumerConn, _ := cluster.Connect(t, leader)
	c := e.newConsumer(func(cfg *consumer.Config) { cfg.Conn, cfg.Metrics = consumerConn, reg })

	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	charged := func(want int, after string) {
		t.Helper()
		pgtest.WaitFor(t, 45*time.Second, func() (bool, error) {
			select {
			case err := <-done:
				return false, fmt.Errorf("Run returned %v %s, want it to go on", err, after)
			default:
			}
			return e.count(`select count(*) from effects where state = 'completed'`) == want, nil
		})
	}
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			e.publishThroughOutage(fmt.Sprintf("e%02d", i), orderJSON(fmt.Sprintf("acct-%d", i), 100+i))
		}
	}
	publish(0, 5)
	charged(5, "before any fault")

	if got := cluster.ServerOf(consumerConn); got != leader {
		t.Fatalf("the consumer is on server %d, want the durable's leader %d", got, leader)
	}
	cluster.Kill(leader)
	publish(5, 10)
	charged(10, "after the server it was connected to, the durable's leader, was killed")

	if err := natstest.StepDownConsumer(e.ctx, e.nats.Conn, "ORDERS", consumerName); err != nil {
		t.Fatal(err)
	}
	publish(10, 15)
	charged(15, "after the durable's leader stepped down")

	cancelRun(t, cancel, done, 10*time.Second)
	if n := e.p.calls.Load(); n != 15 {
		t.Fatalf("provider calls %d, want one per order (15)", n)
	}
	t.Logf("interruptions ridden through: %v", interruptions(t, reg))
}

// cancelRun cancels a Run and fails t unless it returns nil within patience.
func cancelRun(t *testing.T, cancel context.CancelFunc, done <-chan error, patience time.Duration) {
	t.Helper()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v after cancellation, want nil", err)
		}
	case <-time.After(patience):
		t.Fatalf("Run did not return within %s of cancellation", patience)
	}
}

// interruptions reads MetricPullInterruptions from reg, by reason.
func interruptions(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != consumer.MetricPullInterruptions {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" {
					got[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return got
}

// TestRunRidesThroughMissedHeartbeats: the path to the server stalls (the connection stays up,
// nothing arrives) for longer than two pull heartbeats. The iterator reports the missed
// heartbeats; Run counts them and goes on, and an order published during the stall is charged
// once the path is back.
func TestRunRidesThroughMissedHeartbeats(t *testing.T) {
	slowtest.Require(t)
	e := newEnv(t)
	listening := natstest.Start(t, true)
	for name, subjects := range map[string][]string{"ORDERS": {"orders.>"}, "DLQ": {"dlq.>"}} {
		if _, err := listening.JS.CreateStream(e.ctx, jetstream.StreamConfig{Name: name, Subjects: subjects}); err != nil {
			t.Fatal(err)
		}
	}
	e.nats = listening
	proxy := natstest.StartFreezeProxy(t, strings.TrimPrefix(listening.URL, "nats://"))
	nc, err := nats.Connect(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	reg := prometheus.NewRegistry()
	c := e.newConsumer(func(cfg *consumer.Config) { cfg.Conn, cfg.Metrics = nc, reg })
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	e.publish("e00", orderJSON("acct-0", 100), nil)
	pgtest.WaitFor(t, 10*time.Second, func() (bool, error) {
		return e.count(`select count(*) from effects where state = 'completed'`) == 1, nil
	})

	proxy.Freeze()
	e.publish("e01", orderJSON("acct-1", 101), nil)
	pgtest.WaitFor(t, 20*time.Second, func() (bool, error) {
		return interruptions(t, reg)["missed_heartbeat"] >= 1, nil
	})
	proxy.Thaw()
	pgtest.WaitFor(t, 15*time.Second, func() (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("Run returned %v after missed heartbeats, want it to go on", err)
		default:
		}
		return e.count(`select count(*) from effects where state = 'completed'`) == 2, nil
	})
	cancelRun(t, cancel, done, 10*time.Second)
	if n := e.p.calls.Load(); n != 2 {
		t.Fatalf("provider calls %d, want 2", n)
	}
}

// TestRunStopsNamedWhenTheConnectionIsClosed: a connection closed for good is not ridden
// through; Run says which stream and durable, and what to do.
func TestRunStopsNamedWhenTheConnectionIsClosed(t *testing.T) {
	e := newEnv(t)
	nc, err := e.nats.Connect()
	if err != nil {
		t.Fatal(err)
	}
	c := e.newConsumer(func(cfg *consumer.Config) { cfg.Conn = nc })
	done := make(chan error, 1)
	go func() { done <- c.Run(e.ctx) }()
	e.publish("e00", orderJSON("acct-0", 100), nil)
	pgtest.WaitFor(t, 10*time.Second, func() (bool, error) {
		return e.count(`select count(*) from effects where state = 'completed'`) == 1, nil
	})
	nc.Close()
	select {
	case err := <-done:
		if !errors.Is(err, consumer.ErrConsumeStopped) {
			t.Fatalf("Run returned %v, want ErrConsumeStopped", err)
		}
		for _, want := range []string{"ORDERS", consumerName, "connection is closed", "MaxReconnects"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("Run's error %q does not say %q", err, want)
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of its connection closing")
	}
}
