package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/testenv/ledgerfake"
	"github.com/replayctl/replayctl/internal/testenv/natstest"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
)

const (
	consumerName = "billing"
	orderSubject = "orders.billing"
	dlqSubject   = "dlq.billing"
	// secret stands for PII in a payload: it must never reach last_error, Dlq-Reason or a log.
	secret = "card-4242-4242"
)

// provider is a fake payment provider: it counts calls and can be told to fail, to say it does
// not know whether the charge went through, or to block until released.
type provider struct {
	calls atomic.Int64
	mu    sync.Mutex
	fail  error
	block chan struct{}
	// entered receives one value per call that reached the provider, when set.
	entered chan struct{}
}

func (p *provider) failWith(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail = err
}

func (p *provider) charge(ctx context.Context) (string, error) {
	n := p.calls.Add(1)
	p.mu.Lock()
	fail, block, entered := p.fail, p.block, p.entered
	p.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if fail != nil {
		return "", fail
	}
	return fmt.Sprintf("ch_%d", n), nil
}

// order is the test payload.
type order struct {
	Account string `json:"account"`
	Amount  int    `json:"amount"`
	Card    string `json:"card"`
}

func orderJSON(account string, amount int) string {
	b, _ := json.Marshal(order{Account: account, Amount: amount, Card: secret})
	return string(b)
}

// chargeHandler charges the order's account once; an amount of 0 or less is declined, a
// business outcome.
func chargeHandler(p *provider) consumer.Handler {
	return func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		var o order
		if err := json.Unmarshal(ev.Payload, &o); err != nil {
			return consumer.Result{}, consumer.Business(fmt.Errorf("unreadable order: %w", err))
		}
		if o.Amount <= 0 {
			return consumer.Result{}, consumer.Business(errors.New("amount must be positive"))
		}
		ref, err := fx.Call(ctx, "charge", o.Account, p.charge)
		if err != nil {
			return consumer.Result{}, fmt.Errorf("charge %s: %w", o.Account, err)
		}
		return consumer.Result{Body: map[string]any{"charged": o.Amount, "ref": ref}}, nil
	}
}

// env is one test's ledger schema and NATS server, with an ORDERS stream and a Limits DLQ stream;
// or, from newFakeEnv, ledgerfake's ledger instead of the schema.
type env struct {
	t     *testing.T
	ctx   context.Context
	store *ledger.Store
	// fake is the ledger of a newFakeEnv: held to PostgreSQL's behaviour by ledgerconformance.
	fake *ledgerfake.Effects
	// db is the test's own pool on the store's schema, for rows and assertions no SDK call makes.
	db   *pgxpool.Pool
	nats *natstest.Env
	p    *provider
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := newNATSEnv(t)
	e.store = pgtest.Ledger(t)
	e.db = pgtest.Pool(t, e.store)
	return e
}

// newFakeEnv is newEnv on ledgerfake's ledger: for a test of the SDK's rules that reads rows only
// through e.row, no PostgreSQL.
func newFakeEnv(t *testing.T) *env {
	t.Helper()
	e := newNATSEnv(t)
	e.fake = ledgerfake.NewEffects()
	return e
}

func newNATSEnv(t *testing.T) *env {
	t.Helper()
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	n := natstest.Start(t, false)
	for name, subjects := range map[string][]string{"ORDERS": {"orders.>"}, "DLQ": {"dlq.>"}} {
		if _, err := n.JS.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: subjects, Retention: jetstream.LimitsPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	return &env{t: t, ctx: ctx, nats: n, p: &provider{}}
}

// newConsumer builds a consumer of ORDERS with test-sized timings; mod adjusts the config.
func (e *env) newConsumer(mod func(*consumer.Config)) *consumer.Consumer {
	e.t.Helper()
	cfg := consumer.Config{
		Name: consumerName, Store: e.ledger(), Conn: e.nats.Conn, Stream: "ORDERS", DLQSubject: dlqSubject,
		Handler: chargeHandler(e.p), Lease: 5 * time.Second, Heartbeat: time.Second, MaxDeliver: 3,
		RetryBackoff: 10 * time.Millisecond, Owner: "instance-a",
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := consumer.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// ledger is the env's ledger: the fake's or the schema's.
func (e *env) ledger() consumer.Ledger {
	if e.fake != nil {
		return e.fake
	}
	return e.store
}

func (e *env) durable(c *consumer.Consumer) jetstream.Consumer {
	e.t.Helper()
	cons, err := c.EnsureDurable(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return cons
}

// publish stores a message on orders.billing with Event-Id and the extra headers.
func (e *env) publish(eventID, payload string, headers map[string]string) uint64 {
	e.t.Helper()
	msg := nats.NewMsg(orderSubject)
	msg.Data = []byte(payload)
	if eventID != "" {
		msg.Header.Set(protocol.HeaderEventID, eventID)
	}
	for k, v := range headers {
		msg.Header.Set(k, v)
	}
	ack, err := e.nats.JS.PublishMsg(e.ctx, msg)
	if err != nil {
		e.t.Fatal(err)
	}
	return ack.Sequence
}

func replay(job string, version int, writeForbidden bool) map[string]string {
	return map[string]string{
		protocol.HeaderReplayJob: job, protocol.HeaderReplayMode: protocol.ModeExecute,
		protocol.HeaderReplayEffectVersion: fmt.Sprint(version), protocol.HeaderReplayWriteForbidden: protocol.FormatBool(writeForbidden),
	}
}

// next fetches the durable's next delivery, waiting for a redelivery if need be.
func (e *env) next(cons jetstream.Consumer) jetstream.Msg {
	e.t.Helper()
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		e.t.Fatal(err)
	}
	for msg := range batch.Messages() {
		return msg
	}
	e.t.Fatalf("no message delivered within 5s (%v)", batch.Error())
	return nil
}

// processNext fetches and processes one delivery, failing unless the outcome is want.
func (e *env) processNext(c *consumer.Consumer, cons jetstream.Consumer, want consumer.OutcomeKind) consumer.Outcome {
	e.t.Helper()
	out := c.Process(e.ctx, e.next(cons))
	if out.Kind != want {
		e.t.Fatalf("outcome %s (%v), want %s", out.Kind, out.Err, want)
	}
	return out
}

// settled waits until the durable has nothing pending or unacknowledged: every message was acked
// or termed, and none will be redelivered.
func (e *env) settled(cons jetstream.Consumer) {
	e.t.Helper()
	pgtest.WaitFor(e.t, 5*time.Second, func() (bool, error) {
		info, err := cons.Info(e.ctx)
		if err != nil {
			return false, err
		}
		return info.NumAckPending == 0 && info.NumPending == 0, nil
	})
}

// row reads the ledger row of eventID under version.
func (e *env) row(eventID string, version int) ledger.EffectRow {
	e.t.Helper()
	rows, err := e.ledger().EffectsForEvent(e.ctx, consumerName, eventID)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, r := range rows {
		if r.EffectVersion == version {
			return r
		}
	}
	e.t.Fatalf("no ledger row for %s version %d (rows: %+v)", eventID, version, rows)
	return ledger.EffectRow{}
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(e.ctx, sql, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func (e *env) register(version int, state, job string) {
	e.t.Helper()
	if err := ledger.EffectVersionsRegister(e.ctx, e.db, consumerName, version, state, job, "alice"); err != nil {
		e.t.Fatal(err)
	}
}

// recordJob records job as a job of sourceKind, as plan does, so the SDK can read its kind.
func (e *env) recordJob(job string, version int, sourceKind string) {
	e.t.Helper()
	err := ledger.JobsInsert(e.ctx, e.db, ledger.Job{ID: job, Consumer: consumerName, Status: jobtype.Executing,
		ManifestDigest: "sha256:test", EffectVersionFrom: version - 1, EffectVersionTo: version, Reason: "test",
		Stream: "ORDERS", LedgerStateDigest: "sha256:test", CreatedBy: "alice", SourceKind: sourceKind})
	if err != nil {
		e.t.Fatal(err)
	}
}

func refsOf(t *testing.T, r ledger.EffectRow) []protocol.Effect {
	t.Helper()
	var refs []protocol.Effect
	if err := json.Unmarshal(r.ExternalRefs, &refs); err != nil {
		t.Fatalf("external_refs %s: %v", r.ExternalRefs, err)
	}
	return refs
}
