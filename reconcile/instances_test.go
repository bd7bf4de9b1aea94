package reconcile_test

import (
	"testing"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/protocol"
	"github.com/replayctl/replayctl/reconcile"
)

// With two billing instances, the one that answers a look-up is often not the one that handled
// the event. Kept in this process's memory, its record says "unknown" for what the other did;
// kept in the database, every instance answers alike (issue 16, "Also").
func TestReconcileAnswersAlikeWhicheverBillingInstanceLooksUp(t *testing.T) {
	t.Parallel()
	// Instance A handles the events and serves no look-up.
	w := newWorldKeeping(t, 6, []int{1, 4}, []int{2}, false, true)
	req := consumer.LookupRequest{EventID: exectest.EventID(1)}

	// An instance keeping its record in memory knows nothing of what A did.
	inMemory, err := billing.Lookup(billing.NewProvider(), billing.NewOrders())(w.Ctx, req)
	if err != nil || inMemory.Verdict != protocol.VerdictUnknown {
		t.Fatalf("in-memory look-up on another instance: %+v, %v; want unknown (the old behaviour)", inMemory, err)
	}

	// Instance B: its own provider counts (none), the shared records, and the look-up responder.
	records := w.records()
	providerB := billing.NewProvider()
	providerB.Records = records
	b := w.NewConsumer(nil, func(cfg *consumer.Config) { cfg.Lookup = billing.Lookup(providerB, billing.SharedOrders(records)) })
	stop, err := b.ServeLookup(w.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	r, err := w.run(reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := reconcile.Totals{Listed: 3, Happened: 2, NotHappened: 1, Reconciled: 2, ManualReview: 1, Remaining: 1}
	if r.Totals != want {
		t.Fatalf("totals %+v from instance B, want %+v: the same answers as the instance that handled them", r.Totals, want)
	}
	charges, err := records.ChargesOf(w.Ctx, exectest.Order(1).OrderID)
	if err != nil || len(charges) != 1 {
		t.Fatalf("charges of order 1: %+v, %v", charges, err)
	}
	if n := w.QueryInt(`select count(*) from effects where event_id = $1 and review_verdict = 'happened' and external_refs @> $2::jsonb`,
		exectest.EventID(1), `[{"kind":"payments.charge","ref":"`+charges[0].ID+`"}]`); n != 1 {
		t.Errorf("the reconciled row does not hold charge %s, the provider's reference A's charge got", charges[0].ID)
	}
	if n := providerB.Calls(""); n != 0 {
		t.Errorf("instance B's look-ups made %d provider calls", n)
	}
}
