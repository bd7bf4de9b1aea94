package ledger_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

// seedReconcileRows imports rows of consumer billing: uncertain u-0..u-(n-1) under version 1, plus
// rows reconcile must never list (another state, another consumer).
func seedReconcileRows(t *testing.T, store *ledger.Store, n int) {
	t.Helper()
	var rows []ledger.EffectRow
	for i := range n {
		rows = append(rows, ledger.EffectRow{Consumer: "billing", EventID: fmt.Sprintf("u-%d", i), EffectVersion: 1, State: "uncertain",
			RequestHash: "sha256:aa", RequestHashAlg: "canonical-json-v1"})
	}
	rows = append(rows,
		ledger.EffectRow{Consumer: "billing", EventID: "done", EffectVersion: 1, State: "completed", RequestHash: "sha256:aa", RequestHashAlg: "canonical-json-v1"},
		ledger.EffectRow{Consumer: "mailer", EventID: "u-0", EffectVersion: 1, State: "uncertain", RequestHash: "sha256:aa", RequestHashAlg: "canonical-json-v1"},
	)
	if _, err := store.EffectsImport(t.Context(), rows); err != nil {
		t.Fatal(err)
	}
}

func listUncertain(t *testing.T, store *ledger.Store, f ledger.UncertainFilter, page int) []ledger.UncertainRow {
	t.Helper()
	var out []ledger.UncertainRow
	var after *ledger.UncertainCursor
	for range 100 {
		rows, err := store.EffectsUncertainPage(t.Context(), f, after, page)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 {
			return out
		}
		out = append(out, rows...)
		last := rows[len(rows)-1]
		after = &ledger.UncertainCursor{EventID: last.EventID, EffectVersion: last.EffectVersion}
	}
	t.Fatal("paging did not end")
	return nil
}

func uncertainKeys(rows []ledger.UncertainRow) []string {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = fmt.Sprintf("%s@%d", r.EventID, r.EffectVersion)
	}
	return ids
}

func TestEffectsUncertainPageListsOneConsumersUncertainRowsInKeysetPages(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	seedReconcileRows(t, store, 5)
	// The same event uncertain under a second version, written by a job: listed after version 1.
	if _, err := store.EffectsImport(t.Context(), []ledger.EffectRow{{Consumer: "billing", EventID: "u-1", EffectVersion: 2,
		State: "uncertain", RequestHash: "sha256:aa", RequestHashAlg: "canonical-json-v1", JobID: "job-1"}}); err != nil {
		t.Fatal(err)
	}
	all := listUncertain(t, store, ledger.UncertainFilter{Consumer: "billing"}, 2)
	want := []string{"u-0@1", "u-1@1", "u-1@2", "u-2@1", "u-3@1", "u-4@1"}
	if got := uncertainKeys(all); !slices.Equal(got, want) {
		t.Fatalf("pages of 2 listed %v, want %v: only billing's uncertain rows, each once, in key order", got, want)
	}

	if got := uncertainKeys(listUncertain(t, store, ledger.UncertainFilter{Consumer: "billing", JobID: "job-1"}, 10)); !slices.Equal(got, []string{"u-1@2"}) {
		t.Errorf("--job job-1 listed %v", got)
	}

	if _, err := store.Pool().Exec(t.Context(), `update effects set updated_at = now() - interval '2 hours'
		where consumer = 'billing' and event_id in ('u-3', 'u-4')`); err != nil {
		t.Fatal(err)
	}
	old := listUncertain(t, store, ledger.UncertainFilter{Consumer: "billing", OlderThan: time.Hour}, 10)
	if got := uncertainKeys(old); !slices.Equal(got, []string{"u-3@1", "u-4@1"}) {
		t.Errorf("--older-than 1h listed %v", got)
	}
	if old[0].Age < 2*time.Hour-time.Minute || old[0].Age > 2*time.Hour+time.Minute {
		t.Errorf("age %s, want about 2h by the database clock", old[0].Age)
	}
}

func TestEffectsReconcileApplySettlesRowsTargetsAndAuditTogether(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	seedReconcileRows(t, store, 4)
	if _, err := store.Pool().Exec(ctx, `update effects set calls_started = 2, effect_count = 1,
		external_refs = '[{"kind":"payments.charge","target":"payments-api","ref":"ch_1"}]', job_id = 'job-1'
		where consumer = 'billing' and event_id = 'u-0'`); err != nil {
		t.Fatal(err)
	}
	if err := ledger.JobsInsert(ctx, store.Pool(), ledger.Job{ID: "job-1", Consumer: "billing", Status: jobtype.Completed,
		ManifestDigest: "sha256:dd", EffectVersionFrom: 0, EffectVersionTo: 1, Reason: "test", Stream: "DLQ",
		LedgerStateDigest: "sha256:ee", CreatedBy: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.JobTargetsInsert(ctx, store.Pool(), []ledger.JobTarget{
		{JobID: "job-1", EventID: "u-0", StreamSeq: 1, OriginalSubject: "billing.x", FailureReason: "timeout", Status: ledger.TargetUncertain},
	}); err != nil {
		t.Fatal(err)
	}
	rows := listUncertain(t, store, ledger.UncertainFilter{Consumer: "billing"}, 10)
	verdict := func(r ledger.UncertainRow, v, note string, found string) ledger.ReconcileVerdict {
		return ledger.ReconcileVerdict{EventID: r.EventID, EffectVersion: r.EffectVersion, Verdict: v, Note: note,
			FoundRefs: json.RawMessage(found), SeenUpdatedAt: r.UpdatedAt, SeenReviewedAt: r.ReviewedAt}
	}
	// u-3 stops being uncertain between list and apply: the compare-and-set must leave it alone.
	if _, err := store.Pool().Exec(ctx, `update effects set state = 'completed', updated_at = now() where consumer = 'billing' and event_id = 'u-3'`); err != nil {
		t.Fatal(err)
	}
	batch := ledger.ReconcileBatch{Consumer: "billing", Actor: "alice", RunID: "run-1", Verdicts: []ledger.ReconcileVerdict{
		verdict(rows[0], ledger.VerdictHappened, "charged once",
			`[{"kind":"payments.charge","target":"payments-api","ref":"ch_1"},{"kind":"payments.charge","target":"payments-api","ref":"ord-0"}]`),
		verdict(rows[1], ledger.VerdictNotHappened, "no charge", `[]`),
		verdict(rows[2], ledger.VerdictUnknown, "", `[]`),
		verdict(rows[3], ledger.VerdictHappened, "charged", `[]`),
	}}
	applied, err := store.EffectsReconcileApply(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(applied))
	for i, a := range applied {
		got[i] = fmt.Sprintf("%s:%s:%t", a.EventID, a.State, a.TargetUpdated)
	}
	if want := []string{"u-0:reconciled:true", "u-1:uncertain:false", "u-2:uncertain:false"}; !slices.Equal(got, want) {
		t.Fatalf("applied %v, want %v (u-3 changed since listed)", got, want)
	}

	var state, refs string
	var effectCount int
	var reviewState, verdictCol, by *string
	if err := store.Pool().QueryRow(ctx, `select state, external_refs::text, effect_count, review_state, review_verdict, reviewed_by
		from effects where consumer = 'billing' and event_id = 'u-0'`).Scan(&state, &refs, &effectCount, &reviewState, &verdictCol, &by); err != nil {
		t.Fatal(err)
	}
	if state != "reconciled" || effectCount != 2 || reviewState != nil || *verdictCol != "happened" || *by != "alice" {
		t.Errorf("u-0: state %s, effect_count %d, review_state %v, verdict %v, by %v", state, effectCount, reviewState, *verdictCol, *by)
	}
	var parsed []map[string]any
	if err := json.Unmarshal([]byte(refs), &parsed); err != nil || len(parsed) != 2 {
		t.Errorf("u-0 external_refs %s: want the recorded ch_1 once and the found ord-0 appended", refs)
	}
	if n := queryInt(t, store, `select count(*) from effects where consumer = 'billing' and event_id in ('u-1', 'u-2')
		and state = 'uncertain' and review_state = 'manual_review'`); n != 2 {
		t.Errorf("%d of u-1, u-2 marked manual_review, want 2", n)
	}
	if n := queryInt(t, store, `select count(*) from effects where consumer = 'billing' and event_id = 'u-3' and review_state is null and state = 'completed'`); n != 1 {
		t.Error("u-3, completed between list and apply, was touched")
	}
	if n := queryInt(t, store, `select count(*) from job_targets where job_id = 'job-1' and event_id = 'u-0' and status = 'completed'`); n != 1 {
		t.Error("the reconciled row's job target is not completed")
	}
	if n := queryInt(t, store, `select count(*) from audit where action like 'reconcile.%' and details->>'run' = 'run-1'`); n != 3 {
		t.Errorf("%d audit entries, want one per changed row (3)", n)
	}
	if n := queryInt(t, store, `select count(*) from audit where action = 'reconcile.reconciled' and job_id = 'job-1'
		and details->>'eventId' = 'u-0' and details->>'verdict' = 'happened'`); n != 1 {
		t.Error("no reconcile.reconciled audit entry for u-0 on job-1")
	}

	// The same batch again: u-1 and u-2 were marked since, so their listed version is stale.
	again, err := store.EffectsReconcileApply(ctx, batch)
	if err != nil || len(again) != 0 {
		t.Fatalf("a stale batch applied %v, %v; want nothing", again, err)
	}
	bad := batch
	bad.Verdicts = []ledger.ReconcileVerdict{verdict(rows[1], "maybe", "", `[]`)}
	if _, err := store.EffectsReconcileApply(ctx, bad); err == nil {
		t.Fatal("a verdict outside the protocol was accepted")
	}
}
