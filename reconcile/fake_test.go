package reconcile_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/internal/testenv/ledgerfake"
	"github.com/replayctl/replayctl/internal/testenv/natstest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/protocol"
	"github.com/replayctl/replayctl/reconcile"
)

// The tests of this file need no PostgreSQL and no consumer: the ledger is ledgerfake's, held to
// PostgreSQL's behaviour by ledgerconformance, and the look-up is a subscription that answers
// each event as verdicts says (an event it does not name gets no reply).

// fakeWorld is an embedded NATS server and a fake ledger holding billing's rows.
type fakeWorld struct {
	t      *testing.T
	nc     *nats.Conn
	ledger *ledgerfake.Effects
}

func newFakeWorld(t *testing.T, rows ...ledgertest.Effect) *fakeWorld {
	t.Helper()
	f := &fakeWorld{t: t, nc: natstest.Start(t, false).Conn, ledger: ledgerfake.NewEffects()}
	f.ledger.AddEffects(rows...)
	return f
}

// answer subscribes billing's look-up subject and replies to each request with the verdict
// verdicts gives its event; an event not there is left unanswered.
func (f *fakeWorld) answer(verdicts map[string]string) {
	f.t.Helper()
	sub, err := f.nc.Subscribe(protocol.ReconcileSubject("billing"), func(m *nats.Msg) {
		var req protocol.ReconcileRequest
		if err := json.Unmarshal(m.Data, &req); err != nil {
			return
		}
		verdict, ok := verdicts[req.EventID]
		if !ok {
			return
		}
		reply := protocol.ReconcileReply{EventID: req.EventID, Verdict: verdict, ExternalRefs: []protocol.Effect{}, Detail: "looked up"}
		if verdict == protocol.VerdictHappened {
			reply.ExternalRefs = []protocol.Effect{{Kind: "charge", Target: "provider", Ref: "ch_" + req.EventID}}
		}
		data, _ := json.Marshal(reply)
		_ = m.Respond(data)
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := f.nc.Flush(); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeWorld) run(o reconcile.Options) (*reconcile.Report, error) {
	f.t.Helper()
	o.Consumer, o.Actor = "billing", "alice"
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Second
	}
	return reconcile.Run(f.t.Context(), f.nc, f.ledger, o)
}

func uncertainRows(ids ...string) []ledgertest.Effect {
	rows := make([]ledgertest.Effect, len(ids))
	for i, id := range ids {
		rows[i] = ledgertest.Effect{EventID: id, State: "uncertain", CallsStarted: 1}
	}
	return rows
}

func TestRunSettlesEachRowAsItsLookUpSays(t *testing.T) {
	t.Parallel()
	f := newFakeWorld(t, append(uncertainRows("evt-1", "evt-2", "evt-3"), ledgertest.Effect{EventID: "evt-4"})...)
	f.answer(map[string]string{"evt-1": protocol.VerdictHappened, "evt-2": protocol.VerdictNotHappened, "evt-3": protocol.VerdictUnknown})
	r, err := f.run(reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Totals.Listed != 3 || r.Totals.Reconciled != 1 || r.Totals.ManualReview != 2 || r.Totals.Remaining != 2 || !r.NeedsReview() {
		t.Fatalf("totals %+v", r.Totals)
	}
	if got, want := f.ledger.States(), "evt-1:reconciled evt-2:uncertain:manual_review evt-3:uncertain:manual_review evt-4:completed"; got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	rows, err := f.ledger.EffectsOfEventForReview(t.Context(), "billing", "evt-1")
	if err != nil || len(rows) != 1 || !strings.Contains(string(rows[0].ExternalRefs), "ch_evt-1") || rows[0].ReviewedBy != "alice" {
		t.Fatalf("reconciled row %+v, %v; want the charge the look-up found, reviewed by alice", rows, err)
	}
	if got := strings.Join(f.ledger.AuditActions(), " "); !strings.Contains(got, ledger.AuditReconciled) || !strings.Contains(got, ledger.AuditReconcileRun) {
		t.Errorf("audit %s; want the row's entry and the run's", got)
	}
}

func TestReconcileWithoutALookupResponderChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFakeWorld(t, append(uncertainRows("evt-1", "evt-2"), ledgertest.Effect{EventID: "evt-0"})...)
	before := f.ledger.States()
	r, err := f.run(reconcile.Options{})
	if !errors.Is(err, reconcile.ErrNoResponder) || r != nil {
		t.Fatalf("err %v, report %v; want ErrNoResponder and no report", err, r)
	}
	for _, want := range []string{"no look-up responder for consumer billing", protocol.ReconcileSubject("billing"), "nothing was changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if got := f.ledger.States(); got != before {
		t.Fatalf("rows changed without a responder: %s, were %s", got, before)
	}
	if got := f.ledger.AuditActions(); len(got) != 0 {
		t.Fatalf("audit entries without a responder: %v", got)
	}
}

func TestReconcileStopsWhenTheResponderNeverReplies(t *testing.T) {
	t.Parallel()
	f := newFakeWorld(t, uncertainRows("evt-0", "evt-2")...)
	f.answer(nil) // subscribed, so requests find a responder, but it never answers
	start := time.Now()
	_, err := f.run(reconcile.Options{Timeout: 200 * time.Millisecond})
	if !errors.Is(err, reconcile.ErrUnanswered) || !strings.Contains(err.Error(), "no reply within 200ms") {
		t.Fatalf("err %v, want ErrUnanswered saying no reply came", err)
	}
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("took %s: the per-request timeout must bound the run", elapsed)
	}
	for _, id := range []string{"evt-0", "evt-2"} {
		rows, err := f.ledger.EffectsOfEventForReview(t.Context(), "billing", id)
		if err != nil || len(rows) != 1 || rows[0].ReviewedAt != nil {
			t.Fatalf("%s: %+v, %v; want it unmarked, since no look-up answered", id, rows, err)
		}
	}
}
