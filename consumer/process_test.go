package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/health"
	"github.com/replayctl/replayctl/internal/testenv/slowtest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
	"github.com/replayctl/replayctl/seal"
)

func TestProcessCompletesALiveEventAndAcksIt(t *testing.T) {
	e := newFakeEnv(t)
	c := e.newConsumer(nil)
	cons := e.durable(c)
	payload := orderJSON("acct-1", 250)
	e.publish("e1", payload, nil)

	out := e.processNext(c, cons, consumer.OutcomeCompleted)
	if out.EventID != "e1" || out.EffectVersion != 1 || out.Err != nil ||
		!reflect.DeepEqual(out.Effects, []protocol.Effect{{Kind: "charge", Target: "acct-1", Ref: "ch_1"}}) {
		t.Fatalf("outcome %+v", out)
	}
	e.settled(cons)

	r := e.row("e1", 1)
	wantBody := `{"charged":250,"ref":"ch_1"}`
	// With no Fingerprint options, v2 hashes the bytes v1 does, under its own name.
	if r.State != "completed" || r.RequestHash != fingerprint.Payload([]byte(payload)) || r.RequestHashAlg != fingerprintV2(t, fingerprint.Options{}).Algorithm() ||
		r.ResultHash != fingerprint.Payload([]byte(wantBody)) || r.EffectCount != 1 || r.OutcomeKind != "" ||
		r.LeaseOwner != "" || r.LeaseExpiresAt != nil || r.Attempts != 1 || r.JobID != "" || r.LastError != "" {
		t.Fatalf("row %+v", r)
	}
	var body, want any
	_ = json.Unmarshal([]byte(wantBody), &want)
	if err := json.Unmarshal(r.ResultBody, &body); err != nil || !reflect.DeepEqual(body, want) {
		t.Fatalf("result_body %s, want %s", r.ResultBody, wantBody)
	}
	if refs := refsOf(t, r); !reflect.DeepEqual(refs, out.Effects) {
		t.Fatalf("external_refs %+v, want %+v", refs, out.Effects)
	}
	if r.ReplayUntil == nil || r.EvidenceUntil == nil || !r.EvidenceUntil.After(*r.ReplayUntil) {
		t.Fatalf("retention: replay_until %v evidence_until %v", r.ReplayUntil, r.EvidenceUntil)
	}
}

func TestProcessAnswersARepeatedEventFromTheLedger(t *testing.T) {
	e := newFakeEnv(t)
	c := e.newConsumer(nil)
	cons := e.durable(c)
	payload := orderJSON("acct-1", 250)
	e.publish("e1", payload, nil)
	e.processNext(c, cons, consumer.OutcomeCompleted)
	before := e.row("e1", 1)

	// A republish (a producer retry, a redrive that kept the Event-Id), with the JSON re-encoded:
	// the canonical fingerprint still matches.
	e.publish("e1", " "+payload+"\n", nil)
	if out := e.processNext(c, cons, consumer.OutcomeDuplicate); out.Err != nil {
		t.Fatalf("duplicate with error %v", out.Err)
	}
	e.settled(cons)
	if n := e.p.calls.Load(); n != 1 {
		t.Fatalf("the provider was called %d times, want 1", n)
	}
	if after := e.row("e1", 1); after.UpdatedAt != before.UpdatedAt || after.Attempts != 1 {
		t.Fatalf("the duplicate touched the row: %+v", after)
	}
}

func TestProcessReportsAChangedPayloadAsAConflict(t *testing.T) {
	e := newFakeEnv(t)
	c := e.newConsumer(nil)
	cons := e.durable(c)
	first, second := orderJSON("acct-1", 250), orderJSON("acct-1", 999)
	e.publish("e1", first, nil)
	e.processNext(c, cons, consumer.OutcomeCompleted)
	before := e.row("e1", 1)

	e.publish("e1", second, nil)
	out := e.processNext(c, cons, consumer.OutcomeConflict)
	if out.StoredHash != fingerprint.Payload([]byte(first)) || out.IncomingHash != fingerprint.Payload([]byte(second)) {
		t.Fatalf("conflict hashes stored %s incoming %s", out.StoredHash, out.IncomingHash)
	}
	if out.Err == nil || !strings.Contains(out.Err.Error(), out.StoredHash) || strings.Contains(out.Err.Error(), secret) {
		t.Fatalf("conflict error %v", out.Err)
	}
	e.settled(cons)
	if after := e.row("e1", 1); !reflect.DeepEqual(after, before) {
		t.Fatalf("the conflict changed the row:\n got %+v\nwant %+v", after, before)
	}
	if n := e.p.calls.Load(); n != 1 {
		t.Fatalf("provider calls %d, want 1", n)
	}
}

// Fail closed: once a call was recorded as started, any error from it but a NotExecuted mark may
// have followed a charge the provider made, so the row is uncertain and the provider is never
// called again for the event.
func TestProcessMarksAFailedStartedCallUncertainForGood(t *testing.T) {
	for name, fail := range map[string]error{
		"deadline":         context.DeadlineExceeded,
		"outcome unknown":  fmt.Errorf("connection reset after the request was sent: %w", consumer.ErrOutcomeUnknown),
		"reset after send": errors.New("read tcp 10.0.0.7:51234->10.0.0.9:443: read: connection reset by peer"),
		"http 5xx":         errors.New("provider answered 503"),
		// A mark that contradicts itself proves nothing.
		"not executed around a timeout": consumer.NotExecuted(fmt.Errorf("charge: %w", context.DeadlineExceeded)),
	} {
		t.Run(name, func(t *testing.T) {
			e := newFakeEnv(t)
			c := e.newConsumer(nil)
			cons := e.durable(c)
			e.p.failWith(fail)
			e.publish("e1", orderJSON("acct-1", 250), nil)

			out := e.processNext(c, cons, consumer.OutcomeUncertain)
			if !errors.Is(out.Err, fail) {
				t.Fatalf("uncertain error %v does not carry the call's error", out.Err)
			}
			e.settled(cons)
			r := e.row("e1", 1)
			if r.State != "uncertain" || !strings.Contains(r.LastError, "call 1 (charge acct-1)") || r.CallsStarted != 1 {
				t.Fatalf("row %+v", r)
			}

			// Even a fresh copy of the event must not reach the provider again.
			e.p.failWith(nil)
			e.publish("e1", orderJSON("acct-1", 250), nil)
			e.processNext(c, cons, consumer.OutcomeUncertain)
			e.settled(cons)
			if n := e.p.calls.Load(); n != 1 {
				t.Fatalf("provider calls %d, want 1", n)
			}
		})
	}
}

func TestProcessNeverRetriesAFailureAfterAWriteWasMade(t *testing.T) {
	e := newFakeEnv(t)
	c := e.newConsumer(func(cfg *consumer.Config) {
		cfg.Handler = func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
			if _, err := fx.Call(ctx, "charge", "acct-1", e.p.charge); err != nil {
				return consumer.Result{}, err
			}
			return consumer.Result{}, errors.New("could not write the receipt")
		}
	})
	cons := e.durable(c)
	e.publish("e1", orderJSON("acct-1", 250), nil)
	e.processNext(c, cons, consumer.OutcomeUncertain)
	e.settled(cons)
	r := e.row("e1", 1)
	if r.State != "uncertain" || r.EffectCount != 1 || !strings.Contains(r.LastError, "after 1 external call(s) were made") {
		t.Fatalf("row %+v", r)
	}
	if refs := refsOf(t, r); len(refs) != 1 || refs[0].Ref != "ch_1" {
		t.Fatalf("external_refs %+v: the made call's reference is the evidence a reviewer needs", refs)
	}
}

// The provider's calls are attempts here: each one refused its connection before the request was
// sent, which the handler marks NotExecuted, so each delivery may try again. (Before fail-closed
// errors, issue 15, an unmarked 503 was retried like this and charged once per delivery.)
func TestProcessRetriesACallThatCertainlyDidNotRunThenDeadLettersIt(t *testing.T) {
	tests := []struct {
		name    string
		version int
		headers map[string]string
	}{
		{"live", 1, nil},
		{"replay", 2, replay("job-7", 2, false)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			c := e.newConsumer(nil)
			cons := e.durable(c)
			if tt.headers != nil {
				e.register(2, "executing", "job-7")
			}
			e.p.failWith(consumer.NotExecuted(errors.New("dial tcp 10.0.0.9:443: connect: connection refused")))
			payload := orderJSON("acct-1", 250)
			seq := e.publish("e1", payload, tt.headers)

			e.processNext(c, cons, consumer.OutcomeRetrying)
			r := e.row("e1", tt.version)
			if r.State != "received" || r.OutcomeKind != "transient" || !strings.Contains(r.LastError, "connection refused") ||
				r.LeaseOwner != "" || r.CallsStarted != 0 {
				t.Fatalf("after a transient failure: %+v", r)
			}
			e.processNext(c, cons, consumer.OutcomeRetrying)
			started := time.Now().UTC().Truncate(time.Second)
			out := e.processNext(c, cons, consumer.OutcomeDeadLettered)
			if !errors.Is(out.Err, consumer.ErrNotExecuted) || !strings.Contains(out.Err.Error(), "connection refused") {
				t.Fatalf("dead-letter reason %v", out.Err)
			}
			e.settled(cons)
			if n := e.p.calls.Load(); n != 3 {
				t.Fatalf("provider attempts %d, want one per delivery (3)", n)
			}
			if r := e.row("e1", tt.version); r.State != "received" || r.Attempts != 3 || strings.Contains(r.LastError, secret) {
				t.Fatalf("after dead-lettering: %+v", r)
			}

			dlqStream, err := e.nats.JS.Stream(e.ctx, "DLQ")
			if err != nil {
				t.Fatal(err)
			}
			m, err := dlqStream.GetLastMsgForSubject(e.ctx, dlqSubject)
			if err != nil {
				t.Fatal(err)
			}
			if string(m.Data) != payload {
				t.Fatalf("DLQ payload %q, want the original", m.Data)
			}
			h := m.Header
			failedAt, err := time.Parse(time.RFC3339, h.Get(dlq.HeaderFailedAt))
			if err != nil || failedAt.Before(started) || failedAt.Location() != time.UTC {
				t.Fatalf("Dlq-Failed-At %q: %v", h.Get(dlq.HeaderFailedAt), err)
			}
			// The class is the root cause, without the account the handler's wrapping names; the
			// detail keeps the whole text.
			const class = "dial tcp 10.0.0.9:443: connect: connection refused"
			if reason := h.Get(dlq.HeaderReason); reason != class {
				t.Fatalf("Dlq-Reason %q, want the reason class %q", reason, class)
			}
			if detail := h.Get(dlq.HeaderReasonDetail); detail != "charge acct-1: "+class || strings.Contains(detail, secret) {
				t.Fatalf("Dlq-Reason-Detail %q, want the handler's error", detail)
			}
			want := map[string]string{
				protocol.HeaderEventID:    "e1",
				dlq.HeaderOriginalSubject: orderSubject,
				dlq.HeaderAttempts:        "3",
				protocol.HeaderMsgID:      fmt.Sprintf("dlq:%s:e1:%d", consumerName, seq),
			}
			for k, v := range tt.headers {
				want[k] = v
			}
			for k, v := range want {
				if got := h.Get(k); got != v {
					t.Errorf("DLQ header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestProcessDeadLettersAMessageThatKeepsCrashingTheHandler(t *testing.T) {
	slowtest.Require(t)
	e := newFakeEnv(t)
	c := e.newConsumer(func(cfg *consumer.Config) {
		cfg.MaxDeliver = 1
		cfg.Lease, cfg.Heartbeat = time.Second, 50*time.Millisecond // ack wait 100ms
	})
	cons := e.durable(c)
	e.publish("e1", orderJSON("acct-1", 250), nil)
	e.next(cons) // delivered, then the process "crashes": never acked

	out := e.processNext(c, cons, consumer.OutcomeDeadLettered)
	if !strings.Contains(out.Err.Error(), "delivered 2 times") {
		t.Fatalf("reason %v", out.Err)
	}
	e.settled(cons)
	if n := e.p.calls.Load(); n != 0 {
		t.Fatalf("the handler ran on a delivery past MaxDeliver (%d provider calls)", n)
	}
	if r := e.row("e1", 1); r.State != "received" || !strings.Contains(r.LastError, "delivered 2 times") {
		t.Fatalf("row %+v", r)
	}
}

func TestProcessDeadLettersAMessageWithoutEventID(t *testing.T) {
	e := newEnv(t)
	c := e.newConsumer(nil)
	cons := e.durable(c)
	for _, h := range []map[string]string{nil,
		{protocol.HeaderReplayJob: "job-1", protocol.HeaderReplayEffectVersion: "two"},
		// A misspelt write-forbidden flag is refused, never read as "writes allowed".
		{protocol.HeaderReplayJob: "job-1", protocol.HeaderReplayEffectVersion: "2", protocol.HeaderReplayWriteForbidden: "yes"},
	} {
		eventID := ""
		if h != nil {
			eventID = "e2"
		}
		e.publish(eventID, `{"n":1}`, h)
		out := e.processNext(c, cons, consumer.OutcomeInvalid)
		if !errors.Is(out.Err, consumer.ErrInvalidMessage) {
			t.Fatalf("invalid message error %v", out.Err)
		}
	}
	e.settled(cons)
	info, err := e.nats.JS.Stream(e.ctx, "DLQ")
	if err != nil {
		t.Fatal(err)
	}
	if si, err := info.Info(e.ctx); err != nil || si.State.Msgs != 3 {
		t.Fatalf("DLQ holds %d messages (%v), want the 3 invalid ones", si.State.Msgs, err)
	}
	if n := e.count(`select count(*) from effects`); n != 0 || e.p.calls.Load() != 0 {
		t.Fatalf("%d ledger rows, %d provider calls for messages without a usable key", n, e.p.calls.Load())
	}
}

func TestProcessStoresABusinessFailureAsTheResult(t *testing.T) {
	e := newFakeEnv(t)
	c := e.newConsumer(nil)
	cons := e.durable(c)
	e.publish("e1", orderJSON("acct-1", 0), nil)
	out := e.processNext(c, cons, consumer.OutcomeBusinessFailure)
	if !consumer.IsBusiness(out.Err) {
		t.Fatalf("business failure error %v", out.Err)
	}
	r := e.row("e1", 1)
	wantBody := `{"error":"amount must be positive"}`
	if r.State != "completed" || r.OutcomeKind != "business" || r.ResultHash != fingerprint.Payload([]byte(wantBody)) ||
		r.LastError != "amount must be positive" || r.EffectCount != 0 {
		t.Fatalf("row %+v", r)
	}
	e.publish("e1", orderJSON("acct-1", 0), nil)
	e.processNext(c, cons, consumer.OutcomeDuplicate)
	e.settled(cons)
}

func TestProcessTurnsAHandlerPanicIntoARetry(t *testing.T) {
	e := newFakeEnv(t)
	c := e.newConsumer(func(cfg *consumer.Config) {
		cfg.Handler = func(context.Context, consumer.Event, *consumer.Effects) (consumer.Result, error) {
			panic("handler bug")
		}
	})
	cons := e.durable(c)
	e.publish("e1", orderJSON("acct-1", 1), nil)
	out := e.processNext(c, cons, consumer.OutcomeRetrying)
	if !strings.Contains(out.Err.Error(), "panicked") {
		t.Fatalf("error %v", out.Err)
	}
	if r := e.row("e1", 1); r.State != "received" || r.OutcomeKind != "transient" {
		t.Fatalf("row %+v", r)
	}
}

func TestAResultKeyringSealsTheStoredBodyAndKeepsThePlaintextsHash(t *testing.T) {
	kr, err := seal.ParseKeyring([]byte(seal.NewKeyLine("k1")))
	if err != nil {
		t.Fatal(err)
	}
	e := newFakeEnv(t)
	c := e.newConsumer(func(cfg *consumer.Config) { cfg.ResultKeyring = kr })
	cons := e.durable(c)
	e.publish("e1", orderJSON("acct-1", 250), nil)
	e.processNext(c, cons, consumer.OutcomeCompleted)
	e.settled(cons)

	r := e.row("e1", 1)
	wantBody := `{"charged":250,"ref":"ch_1"}`
	if strings.Contains(string(r.ResultBody), "charged") || !seal.IsSealedJSON(r.ResultBody) || r.ResultHash != fingerprint.Payload([]byte(wantBody)) {
		t.Fatalf("result_body %s, hash %s: want it sealed, hashed over the plaintext", r.ResultBody, r.ResultHash)
	}
	plain, err := kr.OpenJSON(r.ResultBody, seal.ResultContext(r.Consumer, "e1", 1))
	if err != nil || string(plain) != wantBody {
		t.Fatalf("opened %s, %v", plain, err)
	}
	if _, err := kr.OpenJSON(r.ResultBody, seal.ResultContext(r.Consumer, "e2", 1)); err == nil {
		t.Fatal("the body opened as another event's")
	}
}

// While the DLQ stream refuses new messages (full, discard new) the SDK can neither handle nor
// dead-letter a poison message: it says so in the outcome and the log, records an incident that
// ledger stats warns of, and leaves the message to be redelivered, never dropped.
func TestADeadLetterTheDLQRefusesIsSaidAndCounted(t *testing.T) {
	e := newEnv(t)
	if _, err := e.nats.JS.UpdateStream(e.ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"},
		Retention: jetstream.LimitsPolicy, MaxMsgs: 1, Discard: jetstream.DiscardNew}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.nats.JS.Publish(e.ctx, "dlq.other", []byte("fills the DLQ")); err != nil {
		t.Fatal(err)
	}
	c := e.newConsumer(nil)
	cons := e.durable(c)
	e.publish("e2", `{"n":1}`, map[string]string{protocol.HeaderReplayJob: "job-1", protocol.HeaderReplayEffectVersion: "two"})
	out := e.processNext(c, cons, consumer.OutcomeRetrying)
	if !strings.Contains(out.Err.Error(), "the DLQ stream refused it") {
		t.Fatalf("outcome error %v: want the DLQ's refusal named", out.Err)
	}
	if n := e.count(`select count(*) from effect_incidents where event_id = 'e2' and kind = 'dead_letter_refused'`); n != 1 {
		t.Fatalf("%d dead_letter_refused incidents, want 1", n)
	}
	e.register(1, ledger.EffectVersionLive, "") // a consumer ledger stats knows
	r, err := health.Read(e.ctx, e.store, ledger.StatsOptions{Consumer: consumerName, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !r.DeadLettersRefused.Warn || !strings.Contains(fmt.Sprint(r.Warnings), "the DLQ stream refused 1 dead letters") {
		t.Fatalf("ledger stats %+v: want the refused dead letter warned of", r.Warnings)
	}
}
