package executor_test

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/planner"
)

// processedLive publishes n orders on the billing stream and waits until the billing consumer
// (version 1, which truncates the fee) processed them all live. It returns how many of them the
// fix changes.
func processedLive(t *testing.T, e *exectest.Env, n int) (changedFees int64) {
	t.Helper()
	for i := range n {
		e.PublishLive(exectest.EventID(i), exectest.Order(i))
		if a := exectest.Order(i).AmountCents; billing.FeeCents(a, 1) != billing.FeeCents(a, billing.FixedVersion) {
			changedFees++
		}
	}
	e.WaitIdle()
	if got := e.QueryInt(`select count(*) from effects where effect_version = 1 and state = 'completed'`); got != int64(n) {
		t.Fatalf("%d orders completed live, want %d", got, n)
	}
	return changedFees
}

func planBackfill(e *exectest.Env, jobID string, writeForbidden bool) *manifest.Manifest {
	return e.PlanWith(jobID, func(o *planner.Options) {
		o.Backfill, o.Stream, o.WriteForbidden = true, exectest.Stream, writeForbidden
		o.Reason = "fee rounding fixed in v2; recompute the receipts version 1 truncated"
	})
}

// TestBackfillFindsExactlyTheChangedFeesAndRecordsV2Results is issue 14's first finding: orders
// processed live under version 1, planned from the retained source stream, used to give a
// manifest of 0 targets whose shadow passed. A backfill targets every order version 1
// completed, its shadow diffs each against the ledger's v1 result and finds exactly the orders
// whose fee the fix changes (processedAt as noise), and execute re-processes them under v2 on
// their own subject.
func TestBackfillFindsExactlyTheChangedFeesAndRecordsV2Results(t *testing.T) {
	t.Parallel()
	const n = 40
	e := exectest.New(t, exectest.Options{})
	e.RunConsumer(e.NewConsumer(nil, nil))
	changed := processedLive(t, e, n)
	if changed == 0 || changed == n {
		t.Fatalf("the seed must hold both changed and unchanged fees, has %d changed of %d", changed, n)
	}

	m := planBackfill(e, "job-backfill", false)
	st := m.Stats
	if m.SourceKind() != manifest.SourceBackfill || st.Targets != n || st.CompletedUnderOlderVersion != n || st.AlreadyCompletedRatio != 1 ||
		!maps.Equal(st.PreviousOutcomes, map[string]int64{"v1 completed": n}) || len(st.FailureReasons) != 0 {
		t.Fatalf("backfill plan: kind %s, stats %+v", m.SourceKind(), st)
	}
	if m.ExpectedExternalCalls != 2*n || m.ExternalCallsEstimate.KnownTargets != n {
		t.Fatalf("expected external calls %d (%+v), want the recorded 2 per order", m.ExpectedExternalCalls, m.ExternalCallsEstimate)
	}

	r := e.Shadow(m)
	if tot := r.Totals; tot.Changed != changed || tot.Identical != n-changed || tot.NoOriginal != 0 || tot.ComparedOnHash != 0 {
		t.Fatalf("shadow totals %+v, want %d changed and %d identical against the v1 bodies", tot, changed, n-changed)
	}
	fields := map[string]int{}
	for _, f := range r.Fields {
		if f.Noise > 0 {
			fields[f.Path+" noise"] = f.Noise
		}
		if f.Changed > 0 {
			fields[f.Path+" changed"] = f.Changed
		}
	}
	if fields["processedAt noise"] == 0 || fields["processedAt changed"] != 0 {
		t.Errorf("fields %v: processedAt must be noise, never a change", fields)
	}
	for _, item := range r.Sample.Items {
		for _, c := range item.Changed {
			if c.Path != "feeCents" && c.Path != "totalCents" {
				t.Errorf("%s: %s changed; only the fee (and so the total) may", item.EventID, c.Path)
			}
		}
	}

	res := mustExecute(t, e, options(m, nil))
	if res.Final.Completed != n || res.JobStatus != "completed" {
		t.Fatalf("execute: %+v, status %s", res.Final, res.JobStatus)
	}
	rows, err := e.DB.Query(e.Ctx, `select e.event_id, coalesce(e.result_body, b.body) from effects e
		left join effect_bodies b using (consumer, event_id, effect_version, replay_until)
		where e.effect_version = $1 and e.job_id = $2 and e.state = 'completed'`,
		m.EffectVersion.To, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	fees := map[string]int64{}
	for rows.Next() {
		var id string
		var body []byte
		if err := rows.Scan(&id, &body); err != nil {
			t.Fatal(err)
		}
		var receipt billing.Receipt
		if err := json.Unmarshal(body, &receipt); err != nil {
			t.Fatal(err)
		}
		fees[id] = receipt.FeeCents
	}
	if rows.Err() != nil || len(fees) != n {
		t.Fatalf("%d v2 results recorded (%v), want %d", len(fees), rows.Err(), n)
	}
	for i := range n {
		if want := billing.FeeCents(exectest.Order(i).AmountCents, billing.FixedVersion); fees[exectest.EventID(i)] != want {
			t.Errorf("%s: v2 fee %d, want %d", exectest.EventID(i), fees[exectest.EventID(i)], want)
		}
		// A backfill re-processes on purpose: the live charge and the v2 one.
		if c := e.Provider.Charges(exectest.Order(i).OrderID); c != 2 {
			t.Errorf("%s charged %d times, want the live charge and the backfill's", exectest.Order(i).OrderID, c)
		}
	}
}

// TestWriteForbiddenBackfillMakesNoCallAndSettlesNothing: the recomputed results are recorded
// with their calls suppressed, the provider is never reached, and the next real backfill still
// targets every order, charged the v1 calls, diffed against v1.
func TestWriteForbiddenBackfillMakesNoCallAndSettlesNothing(t *testing.T) {
	t.Parallel()
	const n = 20
	e := exectest.New(t, exectest.Options{})
	e.RunConsumer(e.NewConsumer(nil, nil))
	processedLive(t, e, n)
	live := e.Provider.Calls("")

	m := planBackfill(e, "job-backfill-wf", true)
	e.Shadow(m)
	res := mustExecute(t, e, options(m, nil))
	if res.Final.Completed != n {
		t.Fatalf("write-forbidden backfill: %+v", res.Final)
	}
	e.WaitIdle()
	if calls := e.Provider.Calls("") - live; calls != 0 {
		t.Fatalf("a write-forbidden backfill made %d provider calls", calls)
	}
	if got := e.QueryInt(`select count(*) from effects where job_id = $1 and write_forbidden and effect_count = 0 and state = 'completed'`, m.ID); got != n {
		t.Fatalf("%d write-forbidden rows recorded, want %d", got, n)
	}

	next := planBackfill(e, "job-backfill-real", false)
	if next.Stats.Targets != n || next.Stats.AlreadyCompleted != 0 || next.ExpectedExternalCalls != 2*n {
		t.Fatalf("the real backfill after it: %d targets, %d already completed, %d expected calls; want %d, 0, %d",
			next.Stats.Targets, next.Stats.AlreadyCompleted, next.ExpectedExternalCalls, n, 2*n)
	}
	if r := e.Shadow(next); r.Totals.NoOriginal != 0 || r.Totals.Identical+r.Totals.Changed != n {
		t.Fatalf("shadow of the real backfill %+v: every order must be compared with its v1 result", r.Totals)
	}
}
