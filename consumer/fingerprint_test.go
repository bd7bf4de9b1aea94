package consumer_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

func fingerprintV2(t *testing.T, opts fingerprint.Options) fingerprint.Hasher {
	t.Helper()
	h, err := fingerprint.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// stampedOrder is an order as a producer that stamps its send time and trace context sends it.
func stampedOrder(amount int, sentAt, traceID string, tags string) string {
	return fmt.Sprintf(`{"account":"acct-1","amount":%d,"card":%q,"sentAt":%q,"trace":{"id":%q},"tags":%s}`,
		amount, secret, sentAt, traceID, tags)
}

var volatileOptions = fingerprint.Options{Exclude: []string{"sentAt", "trace.*"}, Sets: []string{"tags"}}

// importRow stands in for a row an older SDK (or another instance) wrote for e1 under version 1.
func (e *env) importRow(state, hash, alg string) {
	e.t.Helper()
	if e.fake != nil {
		e.fake.AddEffects(ledgertest.Effect{Consumer: consumerName, EventID: "e1", State: state, RequestHash: hash, RequestHashAlg: alg})
		return
	}
	if _, err := e.store.EffectsImport(e.ctx, []ledger.EffectRow{{Consumer: consumerName, EventID: "e1", EffectVersion: 1,
		State: state, RequestHash: hash, RequestHashAlg: alg}}); err != nil {
		e.t.Fatal(err)
	}
}

// settledUntouched waits until every message was acked or termed, then checks that the provider
// was called calls times in all and that e1's row under version 1 is still before.
func (e *env) settledUntouched(cons jetstream.Consumer, before ledger.EffectRow, calls int64) {
	e.t.Helper()
	e.settled(cons)
	if n := e.p.calls.Load(); n != calls {
		e.t.Fatalf("provider calls %d, want %d", n, calls)
	}
	if after := e.row("e1", 1); !reflect.DeepEqual(after, before) {
		e.t.Fatalf("a duplicate or a conflict changed the row:\n got %+v\nwant %+v", after, before)
	}
}

// After the switch to v2 (with options that change the hash), a completed v1 row is compared with
// the payload recomputed under v1: comparing v2 with v1 would call the same payload a conflict,
// and skipping the check (as before) would run a different payload.
func TestV1RowsStillConflictCheckAfterTheSwitchToV2(t *testing.T) {
	e := newFakeEnv(t)
	c := e.newConsumer(func(cfg *consumer.Config) { cfg.Fingerprint = volatileOptions })
	cons := e.durable(c)
	original := stampedOrder(250, "2026-12-04T02:00:00Z", "t-1", `["a","b"]`)
	if fingerprint.Payload([]byte(original)) == fingerprintV2(t, volatileOptions).Sum([]byte(original)) {
		t.Fatal("the test needs options under which v1 and v2 hash the payload differently")
	}
	e.importRow("completed", fingerprint.Payload([]byte(original)), fingerprint.Algorithm)
	before := e.row("e1", 1)

	e.publish("e1", original, nil)
	e.processNext(c, cons, consumer.OutcomeDuplicate)

	changed := stampedOrder(999, "2026-12-04T02:00:00Z", "t-1", `["a","b"]`)
	e.publish("e1", changed, nil)
	out := e.processNext(c, cons, consumer.OutcomeConflict)
	if out.StoredHash != before.RequestHash || out.IncomingHash != fingerprint.Payload([]byte(changed)) {
		t.Fatalf("conflict hashes stored %s incoming %s; want the v1 row's and the payload's v1 hash", out.StoredHash, out.IncomingHash)
	}
	e.settledUntouched(cons, before, 0)
}

// A v1 row left received (a transient failure before any call) is taken over only by the same
// payload, recomputed under v1, and the take-over stores the current algorithm and hash.
func TestATakenOverV1RowStoresTheCurrentFingerprint(t *testing.T) {
	e := newFakeEnv(t)
	c := e.newConsumer(func(cfg *consumer.Config) { cfg.Fingerprint = volatileOptions })
	cons := e.durable(c)
	original := stampedOrder(250, "2026-12-04T02:00:00Z", "t-1", `["a","b"]`)
	e.importRow("received", fingerprint.Payload([]byte(original)), fingerprint.Algorithm)

	e.publish("e1", stampedOrder(999, "2026-12-04T02:00:00Z", "t-1", `["a","b"]`), nil)
	e.processNext(c, cons, consumer.OutcomeConflict)
	if r := e.row("e1", 1); r.State != "received" || r.RequestHashAlg != fingerprint.Algorithm {
		t.Fatalf("a different payload took the v1 row over: %+v", r)
	}

	e.publish("e1", original, nil)
	e.processNext(c, cons, consumer.OutcomeCompleted)
	current := fingerprintV2(t, volatileOptions)
	if r := e.row("e1", 1); r.State != "completed" || r.RequestHashAlg != current.Algorithm() || r.RequestHash != current.Sum([]byte(original)) {
		t.Fatalf("the take-over kept the v1 fingerprint: %s %s (%s)", r.RequestHashAlg, r.RequestHash, r.State)
	}
	if n := e.p.calls.Load(); n != 1 {
		t.Fatalf("provider calls %d, want 1", n)
	}
}

// A producer's retry with a new send time, another trace and its set-like tags in another order is
// the same request: a duplicate, not a conflict. A change in the amount still is one.
func TestVolatileFieldsAndSetOrderAreNotAConflict(t *testing.T) {
	e := newFakeEnv(t)
	c := e.newConsumer(func(cfg *consumer.Config) { cfg.Fingerprint = volatileOptions })
	cons := e.durable(c)
	e.publish("e1", stampedOrder(250, "2026-12-04T02:00:00Z", "t-1", `["a","b","c"]`), nil)
	e.processNext(c, cons, consumer.OutcomeCompleted)
	before := e.row("e1", 1)

	e.publish("e1", stampedOrder(250, "2026-12-04T02:07:13Z", "t-2", `["a","b","c"]`), nil)
	e.processNext(c, cons, consumer.OutcomeDuplicate)
	e.publish("e1", stampedOrder(250, "2026-12-04T02:00:00Z", "t-1", `["c","a","b"]`), nil)
	e.processNext(c, cons, consumer.OutcomeDuplicate)
	e.publish("e1", stampedOrder(250, "2026-12-04T02:00:00Z", "t-1", `["a","b"]`), nil)
	e.processNext(c, cons, consumer.OutcomeConflict)
	e.publish("e1", stampedOrder(251, "2026-12-04T02:00:00Z", "t-1", `["a","b","c"]`), nil)
	e.processNext(c, cons, consumer.OutcomeConflict)
	e.settledUntouched(cons, before, 1)
}

// An instance whose options changed compares a row written under the earlier options with those
// options, read from the ledger's registry: the very same payload is a duplicate.
func TestRowsUnderEarlierOptionsAreComparedUnderThoseOptions(t *testing.T) {
	e := newFakeEnv(t)
	before := e.newConsumer(nil)
	cons := e.durable(before)
	payload := stampedOrder(250, "2026-12-04T02:00:00Z", "t-1", `["b","a"]`)
	e.publish("e1", payload, nil)
	e.processNext(before, cons, consumer.OutcomeCompleted)

	after := e.newConsumer(func(cfg *consumer.Config) { cfg.Fingerprint = volatileOptions })
	e.publish("e1", payload, nil)
	e.processNext(after, cons, consumer.OutcomeDuplicate)
	// Under the earlier options the send time counted, so a new one is another request.
	e.publish("e1", stampedOrder(250, "2026-12-04T02:09:00Z", "t-1", `["b","a"]`), nil)
	e.processNext(after, cons, consumer.OutcomeConflict)
	if n := e.p.calls.Load(); n != 1 {
		t.Fatalf("provider calls %d, want 1", n)
	}
}

// A row under an algorithm this instance cannot compute is refused, never processed on a guess.
func TestARowUnderAnUnknownAlgorithmIsRefused(t *testing.T) {
	e := newEnv(t)
	c := e.newConsumer(nil)
	cons := e.durable(c)
	payload := orderJSON("acct-1", 250)
	for _, alg := range []string{fingerprint.V2Prefix + "00000000", "sha256-canon-v3+12345678"} {
		if _, err := e.db.Exec(e.ctx, `delete from effects`); err != nil {
			t.Fatal(err)
		}
		e.importRow("received", "sha256:unknowable", alg)
		e.publish("e1", payload, nil)
		out := e.processNext(c, cons, consumer.OutcomeConflict)
		if !errors.Is(out.Err, fingerprint.ErrUnknownAlgorithm) || out.StoredHash != "sha256:unknowable" {
			t.Fatalf("%s: outcome %+v, want a refusal naming the unknown algorithm", alg, out)
		}
		if r := e.row("e1", 1); r.State != "received" || r.RequestHashAlg != alg {
			t.Fatalf("%s: the row was claimed: %+v", alg, r)
		}
	}
	e.settled(cons)
	if n := e.p.calls.Load(); n != 0 {
		t.Fatalf("provider calls %d, want 0", n)
	}
}

func TestNewRefusesBadFingerprintOptions(t *testing.T) {
	e := newEnv(t)
	_, err := consumer.New(consumer.Config{Name: consumerName, Store: e.store, Conn: e.nats.Conn, Handler: chargeHandler(e.p),
		Fingerprint: fingerprint.Options{Exclude: []string{"trace..id"}}})
	if !errors.Is(err, consumer.ErrBadConfig) || !strings.Contains(err.Error(), `Fingerprint: bad fingerprint options: exclude pattern "trace..id"`) {
		t.Fatalf("New with an empty key in a pattern: %v, want ErrBadConfig naming the field and the pattern", err)
	}
}
