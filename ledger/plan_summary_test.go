package ledger_test

import (
	"testing"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// Every count of the summary has a figure of its own here, so a count read into another field
// (two columns swapped in the query, or a column renamed) fails the comparison.
func TestPlanSummaryReadsEachCountIntoItsField(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	p, err := store.PlanBegin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Rollback(ctx)
	for _, sql := range []string{
		`create temp table plan_events (class text, messages bigint, hashes int, done_older boolean, known_effect_count int) on commit drop`,
		// n rows of each class but target: 1 conflict_source, 2 conflict_ledger, ... 10 evidence_reconciled.
		`insert into plan_events (class, messages, hashes, done_older)
		 select c.class, 1, 1, false
		   from unnest(array['conflict_source', 'conflict_ledger', 'done', 'uncertain', 'in_flight', 'other_job',
		                     'not_processed', 'over_max', 'evidence_expired', 'evidence_reconciled']) with ordinality as c(class, n),
		        generate_series(1, c.n)`,
		// 13 targets: 11 done under an older version, 12 with a known effect count of 2 (24 calls).
		`insert into plan_events (class, messages, hashes, done_older, known_effect_count)
		 select 'target', 1, 1, i <= 11, case when i <= 12 then 2 end from generate_series(1, 13) as i`,
		// One event seen in 15 messages with one payload: 14 repeats.
		`update plan_events set messages = 15 where ctid = (select min(ctid) from plan_events where class = 'done')`,
	} {
		if _, err := p.Tx().Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	got, err := p.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := ledger.PlanSummary{
		Candidates: 68, RepeatedInSource: 14, DuplicateInSource: 1, LedgerPayloadMismatch: 2, AlreadyCompleted: 3,
		CompletedUnderOlderVersion: 11, ExcludedUncertain: 4, ExcludedInFlight: 5, ExcludedInOtherJob: 6, NotProcessed: 7,
		OverMax: 8, EvidenceExpired: 9, EvidenceReconciled: 10, Targets: 13, KnownTargets: 12, KnownCalls: 24,
	}
	if got != want {
		t.Errorf("summary\n got %+v\nwant %+v", got, want)
	}
}
