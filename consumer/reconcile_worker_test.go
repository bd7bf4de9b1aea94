package consumer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/protocol"
)

// A running consumer with a Lookup settles its own uncertain rows with no operator: the row the
// provider knows is reconciled, the others are left for review, each asked once until the wait,
// which grows with the row's age, has passed; a row uncertain for less than ReconcileAfter is not
// asked about at all.
func TestTheReconcileWorkerSettlesUncertainRowsWithNoOperator(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	asked := map[string]int{}
	c := e.newConsumer(func(cfg *consumer.Config) {
		cfg.ReconcileInterval = 20 * time.Millisecond
		cfg.Lookup = func(ctx context.Context, req consumer.LookupRequest) (consumer.LookupResult, error) {
			mu.Lock()
			asked[req.EventID]++
			mu.Unlock()
			switch req.EventID {
			case "evt-charged":
				return consumer.LookupResult{Verdict: protocol.VerdictHappened, Detail: "charge ch_7 found",
					ExternalRefs: []protocol.Effect{{Kind: "charge", Target: "acct-1", Ref: "ch_7"}}}, nil
			case "evt-gone":
				return consumer.LookupResult{Verdict: protocol.VerdictNotHappened, Detail: "no charge"}, nil
			}
			return consumer.LookupResult{Verdict: protocol.VerdictUnknown, Detail: "provider cannot tell"}, nil
		}
	})
	timesAsked := func(event string) int {
		mu.Lock()
		defer mu.Unlock()
		return asked[event]
	}
	uncertain := func(id string, age time.Duration) ledgertest.Effect {
		return ledgertest.Effect{EventID: id, State: "uncertain", CallsStarted: 1, LastError: "charge timed out", UpdatedAgo: age}
	}
	ledgertest.InsertEffects(t, e.db, uncertain("evt-charged", 20*time.Minute), uncertain("evt-gone", 20*time.Minute),
		uncertain("evt-maybe", 20*time.Minute), uncertain("evt-young", time.Minute))

	e.runUntilCleanup(c)
	pgtest.WaitFor(t, 10*time.Second, func() (bool, error) {
		return e.count(`select count(*) from effects where reviewed_at is not null`) == 3, nil
	})
	// Several more passes: nothing is asked again yet.
	time.Sleep(200 * time.Millisecond)

	got := map[string]string{}
	rows, err := e.db.Query(e.ctx, `select event_id, state || coalesce(':' || review_state, '') || coalesce(':' || review_verdict, '')
  from effects where consumer = 'billing'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, s string
		if err := rows.Scan(&id, &s); err != nil {
			t.Fatal(err)
		}
		got[id] = s
	}
	want := map[string]string{"evt-charged": "reconciled:happened", "evt-gone": "uncertain:manual_review:not_happened",
		"evt-maybe": "uncertain:manual_review:unknown", "evt-young": "uncertain"}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: %q, want %q", id, got[id], w)
		}
	}
	for id, n := range map[string]int{"evt-charged": 1, "evt-gone": 1, "evt-maybe": 1, "evt-young": 0} {
		if timesAsked(id) != n {
			t.Errorf("%s asked %d times, want %d", id, timesAsked(id), n)
		}
	}
	if n := e.count(`select count(*) from effects where event_id = 'evt-charged' and external_refs @> '[{"ref":"ch_7"}]'
		and reviewed_by = 'reconcile-worker instance-a'`); n != 1 {
		t.Error("the reconciled row lacks the reference found or the worker's name")
	}
	if n := e.count(`select count(*) from audit where actor = 'reconcile-worker instance-a' and action = 'reconcile.reconciled'
		and details->>'eventId' = 'evt-charged'`); n != 1 {
		t.Errorf("%d audit entries for the worker's reconcile of evt-charged, want 1", n)
	}
	if n := e.p.calls.Load(); n != 0 {
		t.Errorf("%d provider calls: the worker only looks up, it never runs a handler", n)
	}

	// Asked 21 minutes ago when it had been uncertain for 20: due again, and asked again.
	ledgertest.AskedAgo(t, e.db, 21*time.Minute, "evt-maybe")
	pgtest.WaitFor(t, 10*time.Second, func() (bool, error) { return timesAsked("evt-maybe") == 2, nil })
	if timesAsked("evt-gone") != 1 {
		t.Errorf("evt-gone asked %d times, want once: its wait has not passed", timesAsked("evt-gone"))
	}
}
