package reconcile_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/protocol"
	"github.com/replayctl/replayctl/reconcile"
)

const afterHandling = "evt-00000:completed evt-00001:uncertain evt-00002:uncertain evt-00003:completed evt-00004:uncertain evt-00005:completed"

func TestReconcileSettlesChargedRowsAndLeavesTheRestForReview(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 6, []int{1, 4}, []int{2}, true)
	if got := w.states(); got != afterHandling {
		t.Fatalf("rows after handling: %s", got)
	}
	chargesBefore := w.Provider.Calls(billing.EffectCharge)

	r, err := w.run(reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := reconcile.Totals{Listed: 3, Happened: 2, NotHappened: 1, Reconciled: 2, ManualReview: 1, Remaining: 1}
	if r.Totals != want || !r.Applied || !r.NeedsReview() {
		t.Fatalf("totals %+v applied %t, want %+v applied and needing review", r.Totals, r.Applied, want)
	}
	if got := w.states(); got != "evt-00000:completed evt-00001:reconciled evt-00002:uncertain:manual_review "+
		"evt-00003:completed evt-00004:reconciled evt-00005:completed" {
		t.Fatalf("rows after reconcile: %s", got)
	}
	if r.Rows[0].EventID != exectest.EventID(1) || r.Rows[0].Outcome != reconcile.OutcomeReconciled ||
		r.Rows[1].Outcome != reconcile.OutcomeManualReview || r.Rows[1].Verdict != protocol.VerdictNotHappened ||
		!strings.Contains(r.Rows[1].Detail, "no charge for order "+exectest.Order(2).OrderID) {
		t.Fatalf("rows %+v", r.Rows)
	}
	if n := w.QueryInt(`select count(*) from effects where event_id = $1 and external_refs @> $2::jsonb and review_verdict = 'happened'
		and reviewed_by = 'alice'`, exectest.EventID(1), `[{"kind":"payments.charge","ref":"`+exectest.Order(1).OrderID+`"}]`); n != 1 {
		t.Error("the reconciled row does not hold the reference the look-up found")
	}
	if n := w.QueryInt(`select count(*) from effects where event_id = $1 and review_note like '%no charge%'`, exectest.EventID(2)); n != 1 {
		t.Error("the manual-review row does not keep the look-up's detail")
	}
	if n := w.QueryInt(`select count(*) from audit where details->>'run' = $1`, r.RunID); n != 4 {
		t.Errorf("%d audit entries for the run, want 3 rows + 1 run", n)
	}
	if n := w.Provider.Calls(billing.EffectCharge); n != chargesBefore {
		t.Errorf("reconcile made %d charges: look-ups must only read", n-chargesBefore)
	}

	// The next run asks only about the row still uncertain, and shows the previous verdict.
	again, err := w.run(reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Rows) != 1 || again.Rows[0].EventID != exectest.EventID(2) || again.Rows[0].PreviousVerdict != protocol.VerdictNotHappened {
		t.Fatalf("second run rows %+v", again.Rows)
	}
}

func TestReconcileDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 6, []int{1, 4}, []int{2}, true)
	r, err := w.run(reconcile.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Applied || r.Totals.Happened != 2 || r.Totals.NotHappened != 1 || r.Totals.Remaining != 1 || !r.NeedsReview() {
		t.Fatalf("dry run report %+v", r.Totals)
	}
	for _, row := range r.Rows {
		if row.Outcome != reconcile.OutcomeWouldReconcile && row.Outcome != reconcile.OutcomeWouldReview {
			t.Errorf("dry run outcome %s for %s", row.Outcome, row.EventID)
		}
	}
	if got := w.states(); got != afterHandling {
		t.Fatalf("a dry run changed the ledger: %s", got)
	}
	if n := w.QueryInt(`select count(*) from effects where reviewed_at is not null`); n != 0 {
		t.Fatalf("a dry run marked %d rows", n)
	}
	if n := w.QueryInt(`select count(*) from audit where action like 'reconcile%'`); n != 0 {
		t.Fatalf("a dry run wrote %d audit entries", n)
	}
}

func TestReconcileLeavesARowThatChangedAfterItWasListed(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 6, []int{1, 4}, []int{2}, true)
	// Between the look-ups and the apply, another operator settles evt-00001 by hand.
	confirm := func(r *reconcile.Report) (bool, error) {
		ledgertest.SettleByHand(t, w.DB, exectest.EventID(1))
		return true, nil
	}
	r, err := w.run(reconcile.Options{Confirm: confirm})
	if err != nil {
		t.Fatal(err)
	}
	if r.Rows[0].EventID != exectest.EventID(1) || r.Rows[0].Outcome != reconcile.OutcomeChanged {
		t.Fatalf("row %+v, want changed_since_listed", r.Rows[0])
	}
	if r.Totals.Changed != 1 || r.Totals.Reconciled != 1 || r.Totals.ManualReview != 1 {
		t.Fatalf("totals %+v", r.Totals)
	}
	if n := w.QueryInt(`select count(*) from effects where event_id = $1 and reviewed_at is null`, exectest.EventID(1)); n != 1 {
		t.Error("the row changed after listing was touched by the apply")
	}
	if n := w.QueryInt(`select count(*) from audit where details->>'eventId' = $1`, exectest.EventID(1)); n != 0 {
		t.Error("a row left alone was audited as changed")
	}
}

func TestReconcileNotConfirmedChangesNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3, []int{1}, nil, true)
	r, err := w.run(reconcile.Options{Confirm: func(*reconcile.Report) (bool, error) { return false, nil }})
	if !errors.Is(err, reconcile.ErrNotConfirmed) || r == nil || r.Applied || r.Totals.Happened != 1 {
		t.Fatalf("err %v, report %+v; want ErrNotConfirmed with the verdicts, unapplied", err, r)
	}
	if got := w.states(); got != "evt-00000:completed evt-00001:uncertain evt-00002:completed" {
		t.Fatalf("an unconfirmed run changed the ledger: %s", got)
	}
}

func TestOptionsNormaliseReportsEveryProblem(t *testing.T) {
	t.Parallel()
	o := reconcile.Options{Consumer: "bad name", OlderThan: -time.Second, Concurrency: 65, Max: -1, Timeout: -time.Second}
	err := o.Normalise()
	if !errors.Is(err, reconcile.ErrBadOptions) {
		t.Fatalf("err %v, want ErrBadOptions", err)
	}
	for _, want := range []string{"--consumer", "--older-than", "--concurrency 65", "--max -1", "--timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	ok := reconcile.Options{Consumer: "billing"}
	if err := ok.Normalise(); err != nil || ok.Timeout != 5*time.Second || ok.Concurrency != 4 || ok.Max != 1000 || ok.Actor != "unknown" {
		t.Fatalf("defaults %+v, %v", ok, err)
	}
}

// A row left processing after a call started, whose lease lapsed long ago with no message left to
// redeliver it, is never looked at by an SDK again: reconcile lists it beside the uncertain rows
// and settles it as one. Younger lapses, and stuck rows without a call, are not its business.
func TestReconcileSettlesStuckLeasesWithACallStarted(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 6, []int{1}, []int{2}, true)
	stuck := func(event int, lapsedAgo time.Duration, calls int) {
		t.Helper()
		ledgertest.StickLeases(t, w.DB, "killed-instance", calls, lapsedAgo, exectest.EventID(event))
	}
	stuck(2, 20*time.Minute, 1) // its charge timed out before the provider charged
	stuck(3, 20*time.Minute, 1) // charged, then its consumer was killed before the completion
	stuck(4, 5*time.Minute, 1)  // lapsed too recently: a redelivery may still come
	stuck(5, 20*time.Minute, 0) // no call started: nothing to look up

	dry, err := w.run(reconcile.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	before := "evt-00000:completed evt-00001:uncertain evt-00002:processing evt-00003:processing evt-00004:processing evt-00005:processing"
	if got := w.states(); got != before || dry.Totals.Listed != 3 {
		t.Fatalf("dry run listed %d, rows after it: %s", dry.Totals.Listed, got)
	}

	r, err := w.run(reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := reconcile.Totals{Listed: 3, Happened: 2, NotHappened: 1, Reconciled: 2, ManualReview: 1, Remaining: 1}
	if r.Totals != want {
		t.Fatalf("totals %+v, want %+v", r.Totals, want)
	}
	if r.Rows[0].StuckLease || !r.Rows[1].StuckLease || !r.Rows[2].StuckLease || r.Rows[2].EventID != exectest.EventID(3) {
		t.Fatalf("rows %+v: want evt-00001 uncertain, then evt-00002 and evt-00003 as stuck leases", r.Rows)
	}
	if got := w.states(); got != "evt-00000:completed evt-00001:reconciled evt-00002:uncertain:manual_review evt-00003:reconciled "+
		"evt-00004:processing evt-00005:processing" {
		t.Fatalf("rows after reconcile: %s", got)
	}
	if n := w.QueryInt(`select count(*) from effects where event_id = any($1) and lease_expires_at is null and lease_owner = 'killed-instance'`,
		[]string{exectest.EventID(2), exectest.EventID(3)}); n != 2 {
		t.Errorf("%d of 2 settled stuck leases have no lease left and still name the instance that made the call", n)
	}
	if n := w.QueryInt(`select count(*) from audit where details->>'run' = $1 and details->>'from' = 'processing (stuck lease)'`, r.RunID); n != 2 {
		t.Errorf("%d audit entries say a stuck lease was settled, want 2", n)
	}
}
