// Package exectest builds the world execute runs in for tests: a fresh ledger, an in-process NATS
// server with the billing DLQ and the billing stream, a planned job with a passing shadow verdict,
// and the example billing consumer whose provider counts every external call.
package exectest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/testenv/natstest"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/planner"
	"github.com/replayctl/replayctl/shadow"
)

// Names of the test world.
const (
	Consumer        = "billing"
	DLQStream       = "DLQ_BILLING"
	DLQSubject      = "dlq.billing.charge"
	Stream          = "BILLING"
	OriginalSubject = "billing.charge.requested"
)

// Env is one test's world.
type Env struct {
	T     testing.TB
	Ctx   context.Context
	NATS  *natstest.Env
	Store *ledger.Store
	// DB is the test's own pool on Store's schema, for rows and assertions no command makes.
	DB *pgxpool.Pool
	// DatabaseURL reaches Store's schema, for a subprocess.
	DatabaseURL string
	Dir         string
	// Provider counts the billing consumer's external calls, per order.
	Provider *billing.Provider
	// Seqs are the DLQ stream sequences of the seeded events.
	Seqs map[string]uint64
	// Cluster is the cluster of Options.Cluster, nil otherwise.
	Cluster *natstest.Cluster
}

// Options shape the world.
type Options struct {
	// Listen makes the NATS server reachable from a subprocess.
	Listen bool
	// Restartable runs a listening server that NATS.Restart can stop and start again in place
	// (natstest.StartRestartable), for fault tests.
	Restartable bool
	// Cluster runs a 3-server JetStream cluster with R3 streams (natstest.StartCluster); NATS's
	// connection picks a server at random, and Env.Cluster kills and restarts servers.
	Cluster bool
	// DatabaseURL puts the ledger in that database (a pgtest.Private server's, which the test may
	// stop and start) instead of a fresh schema of the shared server.
	DatabaseURL string
}

// New builds the streams, the ledger and a provider; nothing is seeded yet.
func New(t testing.TB, o Options) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	var store *ledger.Store
	url := o.DatabaseURL
	if url == "" {
		store, url = pgtest.LedgerWithURL(t)
	} else {
		store = pgtest.LedgerAt(t, url)
	}
	var env *natstest.Env
	var cluster *natstest.Cluster
	replicas := 1
	if o.Cluster {
		cluster, replicas = natstest.StartCluster(t, 3), 3
		nc, js := cluster.Connect(t, -1)
		env = &natstest.Env{Conn: nc, JS: js}
	} else if o.Restartable {
		env = natstest.StartRestartable(t)
	} else {
		env = natstest.Start(t, o.Listen)
	}
	CreateStreams(ctx, t, env.JS, replicas)
	return &Env{T: t, Ctx: ctx, NATS: env, Store: store, DB: pgtest.Pool(t, store), DatabaseURL: url, Dir: t.TempDir(),
		Provider: billing.NewProvider(), Seqs: map[string]uint64{}, Cluster: cluster}
}

// CreateStreams creates the billing DLQ stream and the billing stream through js, with replicas.
func CreateStreams(ctx context.Context, t testing.TB, js jetstream.JetStream, replicas int) {
	t.Helper()
	for _, cfg := range []jetstream.StreamConfig{
		{Name: DLQStream, Subjects: []string{"dlq.billing.>"}, Replicas: replicas},
		{Name: Stream, Subjects: []string{"billing.>"}, Replicas: replicas},
	} {
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
}

// EventID names seeded event i.
func EventID(i int) string { return fmt.Sprintf("evt-%05d", i) }

// Order is seeded event i's payload.
func Order(i int) billing.Order {
	return billing.Order{OrderID: fmt.Sprintf("ord-%05d", i), Customer: fmt.Sprintf("cus_%03d", i%97),
		AmountCents: int64(500 + (i*37)%20000), Currency: "EUR"}
}

// Seed publishes n failed charges to the DLQ and records one completed history row (of an event
// outside the DLQ) with two effects, so the plan expects two external calls per target: the
// billing consumer's charge and receipt.
func (e *Env) Seed(n int) {
	e.T.Helper()
	for i := range n {
		e.PublishDLQ(EventID(i), Order(i))
	}
	body := json.RawMessage(`{"status":"charged"}`)
	_, err := e.Store.EffectsImport(e.Ctx, []ledger.EffectRow{{
		Consumer: Consumer, EventID: "evt-history", EffectVersion: 1, State: "completed",
		RequestHash: fingerprint.Payload([]byte(`{"orderId":"ord-history"}`)), RequestHashAlg: fingerprint.Algorithm,
		ResultHash: fingerprint.Payload(body), ResultBody: body, EffectCount: 2,
	}})
	if err != nil {
		e.T.Fatal(err)
	}
}

// PublishDLQ adds one DLQ message for eventID.
func (e *Env) PublishDLQ(eventID string, o billing.Order) {
	e.T.Helper()
	e.Seqs[eventID] = e.publishOrder(DLQSubject, eventID, o, map[string]string{
		"Dlq-Reason": "provider timeout after 20s", "Dlq-Original-Subject": OriginalSubject, "Dlq-Attempts": "5",
		"Trace-Id": "trace-" + eventID,
	})
}

// PublishLive publishes o as the original message of eventID on the billing stream, as the
// producer does: a live delivery for the billing consumer.
func (e *Env) PublishLive(eventID string, o billing.Order) uint64 {
	e.T.Helper()
	return e.publishOrder(OriginalSubject, eventID, o, nil)
}

// publishOrder stores o on subject with eventID's Event-Id and headers, and returns its sequence.
func (e *Env) publishOrder(subject, eventID string, o billing.Order, headers map[string]string) uint64 {
	e.T.Helper()
	data, err := json.Marshal(o)
	if err != nil {
		e.T.Fatal(err)
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set("Event-Id", eventID)
	for k, v := range headers {
		msg.Header.Set(k, v)
	}
	ack, err := e.NATS.JS.PublishMsg(e.Ctx, msg)
	if err != nil {
		e.T.Fatal(err)
	}
	return ack.Sequence
}

// Plan plans the whole DLQ into job jobID, manifest at Dir/job.json.
func (e *Env) Plan(jobID string) *manifest.Manifest {
	e.T.Helper()
	return e.PlanWith(jobID, nil)
}

// PlanWith plans job jobID from the DLQ as Plan does, with mod applied to the request first.
func (e *Env) PlanWith(jobID string, mod func(*planner.Options)) *manifest.Manifest {
	e.T.Helper()
	res, err := e.TryPlan(jobID, mod)
	if err != nil {
		e.T.Fatal(err)
	}
	return res.Manifest
}

// TryPlan is PlanWith returning the plan's error.
func (e *Env) TryPlan(jobID string, mod func(*planner.Options)) (*planner.Result, error) {
	// The world's ledger starts empty: its first plan is a first replay of the consumer.
	opts := planner.Options{
		Consumer: Consumer, NewConsumer: true, Stream: DLQStream, Reason: "payments outage INC-4521 fixed; re-run the failed charges",
		OutputPath: e.ManifestPath(), Overwrite: true, Actor: "alice", Now: time.Now(), JobID: jobID,
	}
	if mod != nil {
		mod(&opts)
	}
	return planner.Plan(e.Ctx, e.NATS.JS, e.Store, opts)
}

// ManifestPath is where Plan writes the manifest.
func (e *Env) ManifestPath() string { return filepath.Join(e.Dir, "job.json") }

// NewConsumer is the billing consumer on the test world, with handler; nil means the billing
// handler calling e.Provider.
func (e *Env) NewConsumer(handler consumer.Handler, mod func(*consumer.Config)) *consumer.Consumer {
	e.T.Helper()
	if handler == nil {
		handler = billing.Handler(e.Provider, time.Now)
	}
	// The reconcile worker (with a Lookup) waits an hour between passes: tests of replayctl
	// reconcile age rows by hand and must be the only ones settling them.
	cfg := consumer.Config{Name: Consumer, Store: e.Store, Conn: e.NATS.Conn, Stream: Stream, DLQSubject: DLQSubject,
		Handler: handler, Concurrency: 4, Lease: 10 * time.Second, ReconcileInterval: time.Hour}
	if mod != nil {
		mod(&cfg)
	}
	c, err := consumer.New(cfg)
	if err != nil {
		e.T.Fatal(err)
	}
	return c
}

// Shadow shadows m through the billing consumer's responder with the default thresholds and
// fails the test unless the verdict passes, or the pass made a provider call.
func (e *Env) Shadow(m *manifest.Manifest) *shadow.Report {
	e.T.Helper()
	return e.ShadowWith(m, nil)
}

// ShadowWith is Shadow through a responder running handler (nil: the billing handler).
func (e *Env) ShadowWith(m *manifest.Manifest, handler consumer.Handler) *shadow.Report {
	e.T.Helper()
	before := e.Provider.Calls("")
	c := e.NewConsumer(handler, nil)
	stop, err := c.ServeShadow(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	defer stop()
	r, err := shadow.Run(e.Ctx, e.NATS.Conn, e.NATS.JS, e.Store, shadow.Options{Manifest: m, Thresholds: shadow.DefaultThresholds(),
		Actor: "alice", Sample: 10, Timeout: 5 * time.Second})
	if err != nil {
		e.T.Fatal(err)
	}
	if !r.Verdict.Pass {
		e.T.Fatalf("shadow verdict failed: %v", r.Verdict.Reasons)
	}
	if calls := e.Provider.Calls("") - before; calls != 0 {
		e.T.Fatalf("the shadow pass made %d provider calls", calls)
	}
	return r
}

// Shadowed seeds n events, plans job jobID and shadows it.
func (e *Env) Shadowed(n int, jobID string) *manifest.Manifest {
	e.T.Helper()
	e.Seed(n)
	m := e.Plan(jobID)
	e.Shadow(m)
	return m
}

// RunConsumer runs the billing consumer until the test ends (or stop is called).
func (e *Env) RunConsumer(c *consumer.Consumer) (stop func()) {
	e.T.Helper()
	ctx, cancel := context.WithCancel(e.Ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		// A consumer stopped while it was still creating its durable reports the cancel: that is
		// the stop, not a failure.
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			e.T.Errorf("billing consumer: %v", err)
		}
	}
	e.T.Cleanup(stop)
	return stop
}

// WaitPulling waits until the billing consumer's durable has a pull request waiting: Run has
// created the durable and started everything it serves before its first pull (the look-up
// responder among them), so a plan may now ask it.
func (e *Env) WaitPulling() {
	e.T.Helper()
	e.waitDurable(func(info *jetstream.ConsumerInfo) bool { return info.NumWaiting > 0 })
}

// WaitIdle waits until the billing consumer's durable has nothing pending or unacknowledged: every
// message published so far was handled (completed, refused or dead-lettered).
func (e *Env) WaitIdle() {
	e.T.Helper()
	e.waitDurable(func(info *jetstream.ConsumerInfo) bool { return info.NumAckPending == 0 && info.NumPending == 0 })
}

// waitDurable polls the billing consumer's durable until its info satisfies cond.
func (e *Env) waitDurable(cond func(*jetstream.ConsumerInfo) bool) {
	e.T.Helper()
	pgtest.WaitFor(e.T, 30*time.Second, func() (bool, error) {
		cons, err := e.NATS.JS.Consumer(e.Ctx, Stream, Consumer)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			return false, nil // RunConsumer has not created its durable yet
		}
		if err != nil {
			return false, err
		}
		info, err := cons.Info(e.Ctx)
		if err != nil {
			return false, err
		}
		return cond(info), nil
	})
}

// DuplicateCharges lists the orders charged more than once.
func (e *Env) DuplicateCharges() []string {
	var dups []string
	for order, n := range e.Provider.ChargedOrders() {
		if n > 1 {
			dups = append(dups, fmt.Sprintf("%s charged %d times", order, n))
		}
	}
	return dups
}

// QueryInt runs a single-integer query.
func (e *Env) QueryInt(sql string, args ...any) int64 {
	e.T.Helper()
	var n int64
	if err := e.DB.QueryRow(e.Ctx, sql, args...).Scan(&n); err != nil {
		e.T.Fatalf("%s: %v", sql, err)
	}
	return n
}

// StreamMessage is the billing stream's message at seq.
func (e *Env) StreamMessage(seq uint64) *jetstream.RawStreamMsg {
	e.T.Helper()
	s, err := e.NATS.JS.Stream(e.Ctx, Stream)
	if err != nil {
		e.T.Fatal(err)
	}
	msg, err := s.GetMsg(e.Ctx, seq)
	if err != nil {
		e.T.Fatal(err)
	}
	return msg
}

// StreamMessages counts the messages in the billing stream: what execute published.
func (e *Env) StreamMessages() uint64 {
	e.T.Helper()
	s, err := e.NATS.JS.Stream(e.Ctx, Stream)
	if err != nil {
		e.T.Fatal(err)
	}
	info, err := s.Info(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	return info.State.Msgs
}

// JobStatus is job id's status in the ledger.
func (e *Env) JobStatus(id string) jobtype.Status {
	e.T.Helper()
	job, err := e.Store.JobsGet(e.Ctx, id)
	if err != nil {
		e.T.Fatal(err)
	}
	return job.Status
}

// EffectCounts are the replay's ledger rows of m's job.
func (e *Env) EffectCounts(m *manifest.Manifest) ledger.JobEffectCounts {
	e.T.Helper()
	c, err := e.Store.EffectsJobCounts(e.Ctx, m.Consumer, m.EffectVersion.To, m.ID)
	if err != nil {
		e.T.Fatal(err)
	}
	return c
}
