package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
)

func (e *env) lookupRequest(req protocol.ReconcileRequest) protocol.ReconcileReply {
	e.t.Helper()
	data, err := json.Marshal(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := e.nats.Conn.Request(protocol.ReconcileSubject(consumerName), data, 5*time.Second)
	if err != nil {
		e.t.Fatal(err)
	}
	var reply protocol.ReconcileReply
	if err := json.Unmarshal(resp.Data, &reply); err != nil {
		e.t.Fatalf("look-up reply %s: %v", resp.Data, err)
	}
	return reply
}

func TestLookupAnswersWithTheConsumersVerdict(t *testing.T) {
	e := newEnv(t)
	var asked consumer.LookupRequest
	c := e.newConsumer(func(cfg *consumer.Config) {
		cfg.Lookup = func(ctx context.Context, req consumer.LookupRequest) (consumer.LookupResult, error) {
			switch req.EventID {
			case "charged":
				asked = req
				return consumer.LookupResult{Verdict: protocol.VerdictHappened, Detail: "charged once",
					ExternalRefs: []protocol.Effect{{Kind: "charge", Target: "acct-1", Ref: "ch_9"}}}, nil
			case "down":
				return consumer.LookupResult{}, errors.New("provider API unavailable")
			case "panics":
				panic("nil provider")
			case "maybe":
				return consumer.LookupResult{Verdict: "probably"}, nil
			}
			return consumer.LookupResult{Verdict: protocol.VerdictNotHappened}, nil
		}
	})
	stop, err := c.ServeLookup(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)

	refs := []protocol.Effect{{Kind: "charge", Target: "acct-1", Ref: "ch_1"}}
	reply := e.lookupRequest(protocol.ReconcileRequest{Consumer: consumerName, EventID: "charged", EffectVersion: 2,
		RequestHash: "sha256:ab", ExternalRefs: refs, CallsStarted: 1, JobID: "job-1"})
	if reply.EventID != "charged" || reply.Verdict != protocol.VerdictHappened || reply.Detail != "charged once" ||
		len(reply.ExternalRefs) != 1 || reply.ExternalRefs[0].Ref != "ch_9" {
		t.Fatalf("reply %+v", reply)
	}
	if asked.EffectVersion != 2 || asked.JobID != "job-1" || asked.RequestHash != "sha256:ab" || asked.CallsStarted != 1 ||
		len(asked.ExternalRefs) != 1 || asked.ExternalRefs[0].Ref != "ch_1" {
		t.Fatalf("the look-up was asked %+v; want every field of the request", asked)
	}
	if r := e.lookupRequest(protocol.ReconcileRequest{Consumer: consumerName, EventID: "never"}); r.Verdict != protocol.VerdictNotHappened || r.ExternalRefs == nil {
		t.Fatalf("not happened: reply %+v (externalRefs must be a list)", r)
	}
	// Anything doubtful is unknown, never happened: the requester must not reconcile on it.
	for _, tc := range []struct {
		req  protocol.ReconcileRequest
		want string
	}{
		{protocol.ReconcileRequest{Consumer: consumerName, EventID: "down"}, "look-up failed: provider API unavailable"},
		{protocol.ReconcileRequest{Consumer: consumerName, EventID: "panics"}, "panicked: nil provider"},
		{protocol.ReconcileRequest{Consumer: consumerName, EventID: "maybe"}, `verdict "probably"`},
		{protocol.ReconcileRequest{Consumer: "mailer", EventID: "charged"}, `for consumer "mailer"`},
		{protocol.ReconcileRequest{Consumer: consumerName, EventID: ""}, "eventId is invalid"},
	} {
		r := e.lookupRequest(tc.req)
		if r.Verdict != protocol.VerdictUnknown || !strings.Contains(r.Detail, tc.want) {
			t.Errorf("%+v: reply %+v, want unknown with %q", tc.req, r, tc.want)
		}
	}
	if n := e.count(`select count(*) from effects`); n != 0 {
		t.Fatalf("look-ups wrote %d ledger rows", n)
	}
}

func TestAConsumerWithoutLookupDoesNotAnswer(t *testing.T) {
	e := newEnv(t)
	c := e.newConsumer(nil)
	if _, err := c.ServeLookup(t.Context()); !errors.Is(err, consumer.ErrBadConfig) || !strings.Contains(err.Error(), "Lookup") {
		t.Fatalf("ServeLookup without Lookup: %v, want ErrBadConfig naming Lookup", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	// Run is consuming once its durable exists; a look-up responder would have subscribed before.
	e.durable(c)
	_, err := e.nats.Conn.Request(protocol.ReconcileSubject(consumerName), []byte(`{}`), 2*time.Second)
	if !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("look-up to a consumer without Lookup: %v, want no responders", err)
	}
}

func TestRunServesTheLookupWhileItRuns(t *testing.T) {
	e := newEnv(t)
	c := e.newConsumer(func(cfg *consumer.Config) {
		cfg.Lookup = func(context.Context, consumer.LookupRequest) (consumer.LookupResult, error) {
			return consumer.LookupResult{Verdict: protocol.VerdictUnknown, Detail: "served by Run"}, nil
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var reply *nats.Msg
	deadline := time.Now().Add(5 * time.Second)
	for reply == nil && time.Now().Before(deadline) {
		reply, _ = e.nats.Conn.Request(protocol.ReconcileSubject(consumerName), []byte(`{"consumer":"billing","eventId":"e1"}`), time.Second)
		if reply == nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if reply == nil || !strings.Contains(string(reply.Data), "served by Run") {
		t.Fatalf("no look-up answer from a running consumer within 5s (%v)", reply)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := e.nats.Conn.Request(protocol.ReconcileSubject(consumerName), []byte(`{}`), time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("after Run returned: %v, want no responders (the look-up stops with Run)", err)
	}
}

// reconcileHappened applies a happened verdict to eventID's uncertain row under version, as
// `replayctl reconcile` does.
func (e *env) reconcileHappened(eventID string, version int) {
	e.t.Helper()
	rows, err := e.store.EffectsUncertainPage(e.ctx, ledger.UncertainFilter{Consumer: consumerName}, nil, 10)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, r := range rows {
		if r.EventID != eventID || r.EffectVersion != version {
			continue
		}
		applied, err := e.store.EffectsReconcileApply(e.ctx, ledger.ReconcileBatch{Consumer: consumerName, Actor: "alice", RunID: "run-1",
			Verdicts: []ledger.ReconcileVerdict{{EventID: eventID, EffectVersion: version, Verdict: ledger.VerdictHappened,
				FoundRefs: json.RawMessage(`[]`), SeenUpdatedAt: r.UpdatedAt, SeenReviewedAt: r.ReviewedAt}}})
		if err != nil || len(applied) != 1 {
			e.t.Fatalf("reconcile %s: %v, %v", eventID, applied, err)
		}
		return
	}
	e.t.Fatalf("%s version %d is not uncertain (rows %+v)", eventID, version, rows)
}

func TestAReconciledRowIsNeverRunAgain(t *testing.T) {
	e := newEnv(t)
	c := e.newConsumer(nil)
	cons := e.durable(c)
	e.p.failWith(consumer.ErrOutcomeUnknown)
	e.publish("live-1", orderJSON("acct-1", 250), nil)
	e.processNext(c, cons, consumer.OutcomeUncertain)
	e.register(2, ledger.EffectVersionExecuting, "job-1")
	e.publish("replayed-1", orderJSON("acct-2", 300), replay("job-1", 2, false))
	e.processNext(c, cons, consumer.OutcomeUncertain)
	e.settled(cons)
	e.reconcileHappened("live-1", 1)
	e.reconcileHappened("replayed-1", 2)

	// A redelivered live copy, and a replay under the job's version, are duplicates: the provider
	// is never asked again, and the rows stay reconciled.
	e.p.failWith(nil)
	calls := e.p.calls.Load()
	e.publish("live-1", orderJSON("acct-1", 250), nil)
	e.processNext(c, cons, consumer.OutcomeDuplicate)
	e.publish("replayed-1", orderJSON("acct-2", 300), replay("job-1", 2, false))
	e.processNext(c, cons, consumer.OutcomeDuplicate)
	e.settled(cons)
	if n := e.p.calls.Load(); n != calls {
		t.Fatalf("provider calls went from %d to %d after reconcile: a reconciled event ran again", calls, n)
	}
	for _, k := range []struct {
		id      string
		version int
	}{{"live-1", 1}, {"replayed-1", 2}} {
		if r := e.row(k.id, k.version); r.State != "reconciled" {
			t.Errorf("%s: state %s after redelivery, want reconciled", k.id, r.State)
		}
	}
}
