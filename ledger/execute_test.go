package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

const execAlg = "canonical-json-v1"

// execEffect is a billing row of eventID under version, fingerprinted "sha256:<eventID>" as the
// plans in these tests fingerprint their payloads.
func execEffect(eventID string, version int, state, jobID string) ledger.EffectRow {
	return ledger.EffectRow{Consumer: "billing", EventID: eventID, EffectVersion: version, State: state,
		RequestHash: "sha256:" + eventID, RequestHashAlg: execAlg, JobID: jobID}
}

func execImport(t *testing.T, store *ledger.Store, rows ...ledger.EffectRow) {
	t.Helper()
	if _, err := store.EffectsImport(t.Context(), rows); err != nil {
		t.Fatal(err)
	}
}

func execSQL(t *testing.T, store *ledger.Store, sql string, args ...any) {
	t.Helper()
	if _, err := store.Pool().Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// execTargets records job id with one target per event ID, stream sequences 10, 20, ..., all
// pending, with payload hash "sha256:<eventID>".
func execTargets(t *testing.T, store *ledger.Store, id string, eventIDs ...string) {
	t.Helper()
	if err := ledger.JobsInsert(t.Context(), store.Pool(), sampleJob(id)); err != nil {
		t.Fatal(err)
	}
	targets := make([]ledger.JobTarget, len(eventIDs))
	for i, e := range eventIDs {
		targets[i] = ledger.JobTarget{JobID: id, EventID: e, StreamSeq: int64(10 * (i + 1)),
			OriginalSubject: "billing." + e, FailureReason: "timeout"}
	}
	if _, err := ledger.JobTargetsInsert(t.Context(), store.Pool(), targets); err != nil {
		t.Fatal(err)
	}
	execSQL(t, store, `update job_targets set payload_hash = 'sha256:' || event_id where job_id = $1`, id)
}

func execSetStatus(t *testing.T, store *ledger.Store, jobID, status string, eventIDs ...string) {
	t.Helper()
	execSQL(t, store, `update job_targets set status = $3 where job_id = $1 and event_id = any($2)`, jobID, eventIDs, status)
}

// execTargetStates reads the targets of jobID as "event status detail".
func execTargetStates(t *testing.T, store *ledger.Store, jobID string) []string {
	t.Helper()
	rows, err := store.Pool().Query(t.Context(), `
		select event_id || ' ' || status || coalesce(' ' || outcome_detail, '') from job_targets
		 where job_id = $1 order by event_id`, jobID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestJobTargetsPageToPublishLeavesOutTargetsWithARowUnderTheVersion(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	execTargets(t, store, "job-x", "a", "b", "c", "d", "e", "f", "g", "h")
	execTargets(t, store, "job-y", "z1", "z2")
	execSetStatus(t, store, "job-x", "shadowed", "b")
	execSetStatus(t, store, "job-x", "published", "c")
	execSetStatus(t, store, "job-x", "completed", "d")
	execSetStatus(t, store, "job-x", "skipped", "e")
	execImport(t, store,
		execEffect("f", 2, "processing", "job-x"), // under the version: the consumer has it
		execEffect("g", 1, "completed", ""),       // an older version does not count
		ledger.EffectRow{Consumer: "refunds", EventID: "h", EffectVersion: 2, State: "completed", RequestHash: "x", RequestHashAlg: execAlg},
	)

	page := func(after uint64, limit int) []string {
		t.Helper()
		got, err := store.JobTargetsPageToPublish(ctx, ledger.PublishPage{JobID: "job-x", Consumer: "billing", Version: 2, AfterSeq: after, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tg := range got {
			out = append(out, fmt.Sprintf("%s@%d %s %s", tg.EventID, tg.StreamSeq, tg.OriginalSubject, tg.PayloadHash))
		}
		return out
	}
	if got, want := page(0, 2), []string{"a@10 billing.a sha256:a", "b@20 billing.b sha256:b"}; !slices.Equal(got, want) {
		t.Fatalf("first page %q, want %q", got, want)
	}
	if got, want := page(20, 10), []string{"c@30 billing.c sha256:c", "g@70 billing.g sha256:g", "h@80 billing.h sha256:h"}; !slices.Equal(got, want) {
		t.Fatalf("second page %q, want %q: settled targets and f (a row under version 2) are left out", got, want)
	}
	if got := page(80, 10); len(got) != 0 {
		t.Fatalf("after the last target: %q", got)
	}

	// A first run vouches that no row is ahead of it and skips the probe: the statuses still
	// decide, and the page is the same but for f, whose row this test planted.
	got, err := store.JobTargetsPageToPublish(ctx, ledger.PublishPage{JobID: "job-x", Consumer: "billing", Version: 2,
		AfterSeq: 20, Limit: 10, NoRowsAhead: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tg := range got {
		ids = append(ids, tg.EventID)
	}
	if want := []string{"c", "f", "g", "h"}; !slices.Equal(ids, want) {
		t.Fatalf("page without the probe %q, want %q", ids, want)
	}
}

func TestJobTargetsMarkPublishedKeepsTheFirstPublish(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	execTargets(t, store, "job-p", "a", "b", "c", "d")
	execTargets(t, store, "job-q", "a")
	first := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	execSQL(t, store, `update job_targets set status = 'published', published_at = $1 where job_id = 'job-p' and event_id = 'c'`, first)
	execSetStatus(t, store, "job-p", "shadowed", "b")
	execSetStatus(t, store, "job-p", "completed", "d")

	later := first.Add(time.Hour)
	n, err := store.JobTargetsMarkPublished(ctx, "job-p", []string{"a", "b", "c", "d", "nope"}, later)
	if err != nil || n != 2 {
		t.Fatalf("MarkPublished = %d, %v; want the pending and the shadowed target", n, err)
	}
	if n, err := store.JobTargetsMarkPublished(ctx, "job-p", []string{"a", "b"}, later.Add(time.Hour)); err != nil || n != 0 {
		t.Fatalf("second MarkPublished = %d, %v; want nothing changed", n, err)
	}
	rows, err := store.Pool().Query(ctx, `
		select job_id || '/' || event_id || ' ' || status || ' ' || coalesce(to_char(published_at at time zone 'UTC', 'HH24:MI'), '-')
		  from job_targets order by job_id, event_id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"job-p/a published 04:04", "job-p/b published 04:04", "job-p/c published 03:04", "job-p/d completed -", "job-q/a pending -"}
	if !slices.Equal(got, want) {
		t.Fatalf("targets\n got %q\nwant %q", got, want)
	}
	if n, err := store.JobTargetsMarkPublished(ctx, "job-p", nil, later); err != nil || n != 0 {
		t.Fatalf("no event IDs: %d, %v", n, err)
	}
}

func TestJobTargetsSetOutcomeSettlesOnlyUnsettledTargets(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	execTargets(t, store, "job-o", "a", "b", "c")
	execSetStatus(t, store, "job-o", "completed", "c")
	n, err := store.JobTargetsSetOutcome(ctx, "job-o", ledger.TargetFailed, []ledger.TargetOutcome{
		{EventID: "a", Detail: "DLQ message missing at stream sequence 10"}, {EventID: "b"}, {EventID: "c", Detail: "late"},
	})
	if err != nil || n != 2 {
		t.Fatalf("SetOutcome = %d, %v; want the two pending targets", n, err)
	}
	want := []string{"a failed DLQ message missing at stream sequence 10", "b failed", "c completed"}
	if got := execTargetStates(t, store, "job-o"); !slices.Equal(got, want) {
		t.Fatalf("targets\n got %q\nwant %q", got, want)
	}
	if _, err := store.JobTargetsSetOutcome(ctx, "job-o", ledger.TargetCompleted, []ledger.TargetOutcome{{EventID: "a"}}); err == nil {
		t.Fatal("SetOutcome accepted status completed, which only the ledger's outcome may set")
	}
}

// TestJobTargetsDriftReportsEachKind plans through the ledger's plan session, so planned_states
// is what a real plan stores, then changes the ledger under each target.
func TestJobTargetsDriftReportsEachKind(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	events := []string{"unchanged", "completed-since", "uncertain", "live-lease", "lapsed-lease", "conflict",
		"other-alg", "expired", "own-row", "own-version-foreign", "latest-wins", "gone", "settled"}
	execImport(t, store,
		execEffect("unchanged", 1, "received", ""),
		execEffect("uncertain", 1, "received", ""),
		execEffect("conflict", 1, "received", ""),
		// A DLQ plan keeps out events completed under any version (issue 14), so the rows that
		// change under these two targets are received at plan time.
		execEffect("expired", 1, "received", ""),
		execEffect("latest-wins", 1, "received", ""),
		execEffect("gone", 1, "received", ""),
	)
	planJob(t, store, "job-d", events)

	var planned []string
	rows, err := store.Pool().Query(ctx, `select event_id || '=' || coalesce(planned_states, 'NULL') from job_targets
		where job_id = 'job-d' and event_id in ('unchanged', 'completed-since') order by event_id`)
	if err != nil {
		t.Fatal(err)
	}
	if planned, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if want := []string{"completed-since=NULL", "unchanged=1:received:sha256:unchanged"}; !slices.Equal(planned, want) {
		t.Fatalf("planned_states %q, want %q", planned, want)
	}

	// Right after the plan nothing drifted.
	sum, err := store.JobTargetsDrift(ctx, "job-d", "billing", 2, execAlg, 5)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Checked != 13 || sum.Drifted != 0 || len(sum.ByKind) != 0 || len(sum.Examples) != 0 {
		t.Fatalf("drift right after the plan: %+v", sum)
	}

	live, lapsed := time.Now().Add(time.Minute), time.Now().Add(-time.Second)
	lease := func(e ledger.EffectRow, until time.Time) ledger.EffectRow {
		e.LeaseOwner, e.LeaseExpiresAt = "host-1", &until
		return e
	}
	conflicting := execEffect("conflict", 3, "uncertain", "job-other")
	conflicting.RequestHash = "sha256:other"
	otherAlg := execEffect("other-alg", 1, "received", "")
	otherAlg.RequestHash, otherAlg.RequestHashAlg = "sha256:other", "canonical-json-v2"
	execImport(t, store,
		execEffect("completed-since", 1, "completed", ""),
		lease(execEffect("live-lease", 1, "processing", ""), live),
		lease(execEffect("lapsed-lease", 1, "processing", ""), lapsed),
		conflicting, // a conflict even though its newest row is uncertain
		otherAlg,    // hashes of another algorithm never compare
		execEffect("own-row", 2, "completed", "job-d"), // the job's own replay is no drift
		execEffect("own-version-foreign", 2, "completed", ""),
		lease(execEffect("latest-wins", 3, "processing", "job-other"), live),
		execEffect("settled", 1, "completed", ""),
		ledger.EffectRow{Consumer: "refunds", EventID: "unchanged", EffectVersion: 1, State: "completed", RequestHash: "x", RequestHashAlg: execAlg},
	)
	execSQL(t, store, `update effects set state = 'uncertain' where event_id = 'uncertain'`)
	execSQL(t, store, `update effects set state = 'expired', final_state = state where event_id = 'expired'`)
	execSQL(t, store, `update effects set updated_at = now() - interval '1 hour' where event_id = 'latest-wins' and effect_version = 1`)
	execSQL(t, store, `delete from effects where event_id = 'gone'`)
	execSetStatus(t, store, "job-d", "completed", "settled")
	execSetStatus(t, store, "job-d", "shadowed", "unchanged", "uncertain")
	execSetStatus(t, store, "job-d", "published", "own-row", "live-lease")

	sum, err = store.JobTargetsDrift(ctx, "job-d", "billing", 2, execAlg, 3)
	if err != nil {
		t.Fatal(err)
	}
	wantKinds := map[string]int64{ledger.DriftCompleted: 2, ledger.DriftConflict: 1, ledger.DriftChanged: 3,
		ledger.DriftUncertain: 2, ledger.DriftInFlight: 2}
	if sum.Checked != 12 || sum.Drifted != 10 || !maps.Equal(sum.ByKind, wantKinds) {
		t.Fatalf("drift: checked %d drifted %d by kind %v; want 12, 10, %v", sum.Checked, sum.Drifted, sum.ByKind, wantKinds)
	}
	wantExamples := []ledger.DriftTarget{
		{EventID: "completed-since", Kind: ledger.DriftCompleted, Planned: "", Current: "1:completed:sha256:completed-since"},
		{EventID: "conflict", Kind: ledger.DriftConflict, Planned: "1:received:sha256:conflict", Current: "1:received:sha256:conflict,3:uncertain:sha256:other"},
		{EventID: "expired", Kind: ledger.DriftChanged, Planned: "1:received:sha256:expired", Current: "1:expired:sha256:expired"},
	}
	if !slices.Equal(sum.Examples, wantExamples) {
		t.Fatalf("examples\n got %+v\nwant %+v", sum.Examples, wantExamples)
	}

	all, err := store.JobTargetsDrift(ctx, "job-d", "billing", 2, execAlg, 100)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, d := range all.Examples {
		kinds[d.EventID] = d.Kind
	}
	wantByTarget := map[string]string{
		"completed-since": "completed", "conflict": "conflict", "expired": "changed", "gone": "changed",
		"lapsed-lease": "uncertain", "latest-wins": "in_flight", "live-lease": "in_flight", "other-alg": "changed",
		"own-version-foreign": "completed", "uncertain": "uncertain",
	}
	if !maps.Equal(kinds, wantByTarget) {
		t.Fatalf("kinds by target\n got %v\nwant %v", kinds, wantByTarget)
	}

	n, err := ledger.JobTargetsSkipDrifted(ctx, store.Pool(), "job-d", "billing", 2, execAlg)
	if err != nil || n != 10 {
		t.Fatalf("SkipDrifted = %d, %v; want the 10 drifted targets", n, err)
	}
	got := execTargetStates(t, store, "job-d")
	skipped := 0
	for _, s := range got {
		if strings.Contains(s, " skipped drifted since plan: ") {
			skipped++
		}
	}
	if skipped != 10 || !slices.Contains(got, "conflict skipped drifted since plan: conflict") ||
		!slices.Contains(got, "latest-wins skipped drifted since plan: in_flight") ||
		!slices.Contains(got, "unchanged shadowed") || !slices.Contains(got, "own-row published") || !slices.Contains(got, "settled completed") {
		t.Fatalf("after skipping the drifted targets: %q", got)
	}
	after, err := store.JobTargetsDrift(ctx, "job-d", "billing", 2, execAlg, 5)
	if err != nil || after.Checked != 2 || after.Drifted != 0 {
		t.Fatalf("drift after skipping: %+v, %v; want 2 checked, none drifted", after, err)
	}
}

// planJob records job id through the ledger's plan session, as `replayctl plan` does, with a scan
// of one message per event ID whose payload hash is "sha256:<eventID>".
func planJob(t *testing.T, store *ledger.Store, id string, eventIDs []string) {
	t.Helper()
	ctx := t.Context()
	session, err := store.PlanBegin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Rollback(context.WithoutCancel(ctx))
	scan := make([][]any, len(eventIDs))
	for i, e := range eventIDs {
		scan[i] = []any{int64(i + 1), e, "sha256:" + e, []string{"sha256:" + e}, "timeout", "billing.charge", time.Now()}
	}
	if _, err := session.ScanCopy(ctx, pgx.CopyFromRows(scan)); err != nil {
		t.Fatal(err)
	}
	if err := session.Classify(ctx, "billing", jobtype.SourceDLQ, 2, []string{execAlg}, 400*24*time.Hour, 0, ledger.ScanRepeats{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := session.RecordTargets(ctx, id); err != nil {
		t.Fatal(err)
	}
	job := sampleJob(id)
	job.Targets = int64(len(eventIDs))
	if err := session.Record(ctx, job, ledger.AuditEntry{Actor: "alice", JobID: id, Action: "plan"}); err != nil {
		t.Fatal(err)
	}
	if err := session.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// execOutcomes writes the fields the SDK sets on completion, which an import leaves out.
func execOutcome(t *testing.T, store *ledger.Store, eventID string, version int, jobID, outcomeKind string, effectCount, callsStarted int, lastError string) {
	t.Helper()
	execSQL(t, store, `
		update effects set outcome_kind = nullif($4, ''), effect_count = $5, calls_started = $6, last_error = nullif($7, '')
		 where consumer = 'billing' and event_id = $1 and effect_version = $2 and job_id is not distinct from nullif($3, '')`,
		eventID, version, jobID, outcomeKind, effectCount, callsStarted, lastError)
}

// execJobRows seeds job-c's rows under version 2 and rows that must not count: another job's,
// another version's and another consumer's.
func execJobRows(t *testing.T, store *ledger.Store) {
	t.Helper()
	execImport(t, store,
		execEffect("ok", 2, "completed", "job-c"),
		execEffect("declined", 2, "completed", "job-c"),
		execEffect("reconciled", 2, "reconciled", "job-c"),
		execEffect("unknown", 2, "uncertain", "job-c"),
		execEffect("running", 2, "processing", "job-c"),
		execEffect("stalled", 2, "processing", "job-c"),
		execEffect("retry", 2, "received", "job-c"),
		execEffect("noise-job", 2, "completed", "job-other"),
		execEffect("noise-job2", 2, "uncertain", "job-other"),
		execEffect("noise-version", 1, "uncertain", "job-c"),
		ledger.EffectRow{Consumer: "refunds", EventID: "noise-consumer", EffectVersion: 2, State: "completed",
			RequestHash: "x", RequestHashAlg: execAlg, JobID: "job-c"},
	)
	execOutcome(t, store, "ok", 2, "job-c", "", 2, 2, "")
	execOutcome(t, store, "declined", 2, "job-c", "business", 1, 1, "card declined")
	execOutcome(t, store, "reconciled", 2, "job-c", "", 1, 3, "")
	execOutcome(t, store, "unknown", 2, "job-c", "", 0, 2, "provider timed out after the call started")
	execOutcome(t, store, "running", 2, "job-c", "", 0, 1, "")
	execOutcome(t, store, "retry", 2, "job-c", "transient", 0, 0, "broker unavailable")
	execOutcome(t, store, "noise-job", 2, "job-other", "", 5, 5, "")
	execSQL(t, store, `update effects set lease_owner = 'host-1', lease_expires_at = now() - interval '1 second' where event_id = 'stalled'`)
}

func TestEffectsJobCountsCountsOnlyTheJobsRows(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	execJobRows(t, store)
	got, err := store.EffectsJobCounts(t.Context(), "billing", 2, "job-c")
	if err != nil {
		t.Fatal(err)
	}
	want := ledger.JobEffectCounts{Completed: 2, BusinessFailed: 1, Uncertain: 1, Processing: 2, Retrying: 1,
		SettledCalls: 2 + 1 + 3 + 2, InFlightCalls: 1}
	if got != want {
		t.Fatalf("counts\n got %+v\nwant %+v", got, want)
	}
	if got.Settled() != 4 {
		t.Fatalf("settled %d, want 4", got.Settled())
	}
	if none, err := store.EffectsJobCounts(t.Context(), "billing", 2, "job-none"); err != nil || none != (ledger.JobEffectCounts{}) {
		t.Fatalf("a job without rows: %+v, %v", none, err)
	}
}

func TestEffectsJobItemsListsWhatNeedsReview(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	execJobRows(t, store)
	uncertain, err := store.EffectsJobItems(ctx, "billing", 2, "job-c", ledger.ReviewUncertain, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(uncertain) != 1 || uncertain[0].EventID != "unknown" || uncertain[0].CallsStarted != 2 ||
		uncertain[0].LastError != "provider timed out after the call started" || string(uncertain[0].ExternalRefs) != "[]" ||
		uncertain[0].UpdatedAt.IsZero() {
		t.Fatalf("uncertain items %+v", uncertain)
	}
	failed, err := store.EffectsJobItems(ctx, "billing", 2, "job-c", ledger.ReviewFailed, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(failed) != 1 || failed[0].EventID != "declined" || failed[0].OutcomeKind != "business" || failed[0].EffectCount != 1 {
		t.Fatalf("failed items %+v", failed)
	}
	execImport(t, store, execEffect("another", 2, "uncertain", "job-c"))
	if first, err := store.EffectsJobItems(ctx, "billing", 2, "job-c", ledger.ReviewUncertain, 1); err != nil || len(first) != 1 || first[0].EventID != "another" {
		t.Fatalf("limit 1: %+v, %v; want the first by event ID", first, err)
	}
	if _, err := store.EffectsJobItems(ctx, "billing", 2, "job-c", "processing", 10); err == nil {
		t.Fatal("an unknown review kind was accepted")
	}
}

func TestJobTargetsSettleCopiesTheLedgersOutcome(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	execJobRows(t, store)
	execTargets(t, store, "job-c", "ok", "declined", "reconciled", "unknown", "running", "retry", "noise-job", "noise-version", "quiet", "skipped")
	execSetStatus(t, store, "job-c", "published", "ok", "declined", "unknown", "running")
	execSetStatus(t, store, "job-c", "skipped", "skipped")
	execImport(t, store, execEffect("skipped", 2, "completed", "job-c"))

	n, err := ledger.JobTargetsSettle(ctx, store.Pool(), "job-c", "billing", 2)
	if err != nil || n != 4 {
		t.Fatalf("Settle = %d, %v; want 4 targets settled", n, err)
	}
	want := []string{
		"declined failed card declined", "noise-job pending", "noise-version pending", "ok completed", "quiet pending",
		"reconciled completed", "retry pending", "running published", "skipped skipped", "unknown uncertain",
	}
	if got := execTargetStates(t, store, "job-c"); !slices.Equal(got, want) {
		t.Fatalf("targets\n got %q\nwant %q", got, want)
	}
	if n, err := ledger.JobTargetsSettle(ctx, store.Pool(), "job-c", "billing", 2); err != nil || n != 0 {
		t.Fatalf("second Settle = %d, %v; want nothing left to settle", n, err)
	}
}

func TestJobsTransitionRecordsWhoAndWhy(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	if err := ledger.JobsInsert(ctx, store.Pool(), sampleJob("job-t")); err != nil {
		t.Fatal(err)
	}
	before, err := store.JobsGet(ctx, "job-t")
	if err != nil {
		t.Fatal(err)
	}
	if before.StatusReason != "" || before.StatusBy != "" || !before.StatusAt.IsZero() || before.RunState != nil || !before.RunStateAt.IsZero() {
		t.Fatalf("a new job reads %+v, want no transition and no run state", before)
	}
	err = ledger.JobsTransition(ctx, store.Pool(), ledger.JobTransition{ID: "job-t", From: []jobtype.Status{"planned", "shadowed"},
		To: "paused", Reason: "error rate 12% above 5%", By: "guard"})
	if err != nil {
		t.Fatal(err)
	}
	job, err := store.JobsGet(ctx, "job-t")
	if err != nil {
		t.Fatal(err)
	}
	if job.Status != "paused" || job.StatusReason != "error rate 12% above 5%" || job.StatusBy != "guard" ||
		time.Since(job.StatusAt) > time.Minute || job.UpdatedAt.Before(before.UpdatedAt) {
		t.Fatalf("after the transition: %+v", job)
	}

	err = ledger.JobsTransition(ctx, store.Pool(), ledger.JobTransition{ID: "job-t", From: []jobtype.Status{"executing"}, To: "completed", Reason: "done", By: "bob"})
	if !errors.Is(err, ledger.ErrJobStatus) || !strings.Contains(err.Error(), "job job-t is paused") {
		t.Fatalf("err = %v, want ErrJobStatus naming the status", err)
	}
	if job, _ := store.JobsGet(ctx, "job-t"); job.StatusReason != "error rate 12% above 5%" || job.StatusBy != "guard" {
		t.Fatalf("a refused transition rewrote the record: %+v", job)
	}
	err = ledger.JobsTransition(ctx, store.Pool(), ledger.JobTransition{ID: "job-none", From: []jobtype.Status{"paused"}, To: "executing"})
	if !errors.Is(err, ledger.ErrJobNotFound) {
		t.Fatalf("err = %v, want ErrJobNotFound", err)
	}
	if err := ledger.JobsTransition(ctx, store.Pool(), ledger.JobTransition{ID: "job-t", From: []jobtype.Status{"paused"}, To: "executing", By: "bob"}); err != nil {
		t.Fatal(err)
	}
	if job, _ := store.JobsGet(ctx, "job-t"); job.StatusReason != "" || job.StatusBy != "bob" {
		t.Fatalf("a transition without a reason kept the old one: %+v", job)
	}
}

func TestJobsSetRunStateIsReadBack(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	if err := ledger.JobsInsert(ctx, store.Pool(), sampleJob("job-r")); err != nil {
		t.Fatal(err)
	}
	if err := store.JobsSetRunState(ctx, "job-r", json.RawMessage(`{"rate": 50, "throttled": "max in flight"}`)); err != nil {
		t.Fatal(err)
	}
	job, err := store.JobsGet(ctx, "job-r")
	if err != nil {
		t.Fatal(err)
	}
	var state map[string]any
	if err := json.Unmarshal(job.RunState, &state); err != nil || state["rate"] != 50.0 || state["throttled"] != "max in flight" ||
		time.Since(job.RunStateAt) > time.Minute {
		t.Fatalf("run state %s at %v (%v)", job.RunState, job.RunStateAt, err)
	}
	if err := store.JobsSetRunState(ctx, "job-none", json.RawMessage(`{}`)); !errors.Is(err, ledger.ErrJobNotFound) {
		t.Fatalf("err = %v, want ErrJobNotFound", err)
	}
}

func TestJobsActiveForConsumerListsOtherRunningJobsOldestFirst(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for i, j := range []struct {
		id, consumer string
		status       jobtype.Status
	}{
		{"job-3", "billing", "paused"}, {"job-1", "billing", "executing"}, {"job-self", "billing", "executing"},
		{"job-2", "billing", "planned"}, {"job-4", "billing", "completed"}, {"job-5", "refunds", "executing"},
	} {
		job := sampleJob(j.id)
		job.Consumer, job.Status, job.CreatedAt = j.consumer, j.status, base.Add(-time.Duration(i)*time.Hour)
		if err := ledger.JobsInsert(ctx, store.Pool(), job); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := ledger.JobsActiveForConsumer(ctx, store.Pool(), "billing", "job-self")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID+" "+string(j.Status))
	}
	if want := []string{"job-1 executing", "job-3 paused"}; !slices.Equal(ids, want) {
		t.Fatalf("active jobs %q, want %q", ids, want)
	}
	if jobs[0].Reason != sampleJob("x").Reason || jobs[0].Ticket != "INC-42" {
		t.Fatalf("jobs are not read in full: %+v", jobs[0])
	}
}

func TestLockConsumerExecutionsSerialisesTransactions(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	first, err := store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx)
	if err := ledger.LockConsumerExecutions(ctx, first, "billing"); err != nil {
		t.Fatal(err)
	}
	try := func(consumer string, wait time.Duration) error {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		tx, err := store.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		return ledger.LockConsumerExecutions(ctx, tx, consumer)
	}
	if err := try("billing", 300*time.Millisecond); err == nil {
		t.Fatal("a second transaction took the consumer's lock while the first held it")
	}
	if err := try("refunds", 5*time.Second); err != nil {
		t.Fatalf("another consumer's lock: %v", err)
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := try("billing", 5*time.Second); err != nil {
		t.Fatalf("after the first transaction committed: %v", err)
	}
}

func TestEffectVersionsSetStateMovesOnlyTheJobsVersion(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	if err := ledger.EffectVersionsRegister(ctx, store.Pool(), "billing", 2, ledger.EffectVersionExecuting, "job-1", "alice"); err != nil {
		t.Fatal(err)
	}
	set := func(jobID string, from []string, to string) bool {
		t.Helper()
		ok, err := ledger.EffectVersionsSetState(ctx, store.Pool(), "billing", 2, jobID, from, to)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if set("job-2", []string{"executing"}, "cancelled") {
		t.Fatal("another job moved job-1's version")
	}
	if set("job-1", []string{"live"}, "completed") {
		t.Fatal("the version moved from a state it is not in")
	}
	if !set("job-1", []string{"executing", "live"}, "completed") {
		t.Fatal("job-1 could not complete its version")
	}
	if r, _ := ledger.EffectVersionsIsExecuting(ctx, store.Pool(), "billing", 2, "job-1"); r.Executing {
		t.Fatal("the completed version still reads executing")
	}
}

func TestEffectVersionsHighestOutsideJobIgnoresOnlyTheJobsOwn(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	highest := func() int {
		t.Helper()
		v, err := store.EffectVersionsHighestOutsideJob(ctx, "billing", 3, "job-h")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := highest(); v != 0 {
		t.Fatalf("empty ledger: %d", v)
	}
	if err := ledger.EffectVersionsRegister(ctx, store.Pool(), "billing", 3, ledger.EffectVersionExecuting, "job-h", "alice"); err != nil {
		t.Fatal(err)
	}
	execImport(t, store, execEffect("a", 1, "completed", ""), execEffect("a", 3, "completed", "job-h"),
		execEffect("b", 3, "processing", "job-h"),
		ledger.EffectRow{Consumer: "refunds", EventID: "a", EffectVersion: 9, State: "completed", RequestHash: "x", RequestHashAlg: execAlg})
	if v := highest(); v != 1 {
		t.Fatalf("with the job's own registration and rows: %d, want 1", v)
	}
	if err := ledger.EffectVersionsRegister(ctx, store.Pool(), "billing", 2, ledger.EffectVersionLive, "", "alice"); err != nil {
		t.Fatal(err)
	}
	if v := highest(); v != 2 {
		t.Fatalf("a registered live version 2: %d, want 2", v)
	}
	execImport(t, store, execEffect("c", 3, "completed", "job-other"))
	if v := highest(); v != 3 {
		t.Fatalf("another job's row under version 3: %d, want 3", v)
	}
	execSQL(t, store, `delete from effects where event_id = 'c'`)
	execImport(t, store, execEffect("c", 3, "completed", "job-a")) // sorts before job-h
	if v := highest(); v != 3 {
		t.Fatalf("job-a's row under version 3: %d, want 3", v)
	}
	execSQL(t, store, `delete from effects where event_id = 'c'`)
	if v := highest(); v != 2 {
		t.Fatalf("after removing the other jobs' rows: %d, want 2", v)
	}
	execImport(t, store, execEffect("d", 3, "received", ""))
	if v := highest(); v != 3 {
		t.Fatalf("a live row under version 3: %d, want 3", v)
	}
	if err := ledger.EffectVersionsRegister(ctx, store.Pool(), "billing", 4, ledger.EffectVersionExecuting, "job-other", "bob"); err != nil {
		t.Fatal(err)
	}
	if v := highest(); v != 4 {
		t.Fatalf("another job's registered version 4: %d, want 4", v)
	}
	execImport(t, store, execEffect("e", 6, "completed", ""))
	if v := highest(); v != 6 {
		t.Fatalf("a row above the job's version: %d, want 6", v)
	}
}

func TestExecuteLockAdmitsOneExecutorPerJob(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	release, err := store.ExecuteLock(ctx, "job-e")
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.ExecuteLock(ctx, "job-e")
	if !errors.Is(err, ledger.ErrExecuteRunning) || !strings.Contains(err.Error(), "replayctl pause job-e") {
		t.Fatalf("err = %v, want ErrExecuteRunning naming `replayctl pause job-e`", err)
	}
	shadow, err := store.ShadowLock(ctx, "job-e")
	if err != nil {
		t.Fatalf("the job's shadow lock is a different lock: %v", err)
	}
	shadow()
	other, err := store.ExecuteLock(ctx, "job-f")
	if err != nil {
		t.Fatalf("another job's execute lock: %v", err)
	}
	other()
	release()
	again, err := store.ExecuteLock(ctx, "job-e")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
}

// Execute's retrying guard counts the rows released during its run: a row still waiting out a
// backoff from before does not say the provider is failing now.
func TestEffectsJobRetryingSinceCountsOnlyReleasesFromThen(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	execJobRows(t, store)
	execSQL(t, store, `update effects set updated_at = now() - interval '1 hour' where event_id = 'retry'`)
	for _, c := range []struct {
		since time.Duration
		want  int64
	}{{-2 * time.Hour, 1}, {-time.Minute, 0}} {
		got, err := store.EffectsJobRetryingSince(t.Context(), "billing", 2, "job-c", time.Now().Add(c.since))
		if err != nil || got != c.want {
			t.Errorf("since %s ago: %d, %v; want %d", -c.since, got, err, c.want)
		}
	}
}
