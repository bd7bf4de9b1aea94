package ledger_test

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

func TestEffectVersionsMaxKnown(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	maxKnown := func(consumer string) int {
		t.Helper()
		v, err := store.EffectVersionsMaxKnown(ctx, consumer)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := maxKnown("billing"); v != 0 {
		t.Fatalf("empty ledger: %d, want 0", v)
	}

	effect := func(consumer, eventID string, version int) ledger.EffectRow {
		return ledger.EffectRow{Consumer: consumer, EventID: eventID, EffectVersion: version, State: "completed",
			RequestHash: "sha256:00", RequestHashAlg: "canonical-json-v1"}
	}
	if _, err := store.EffectsImport(ctx, []ledger.EffectRow{
		effect("billing", "e1", 1), effect("billing", "e1", 3), effect("billing", "e2", 2), effect("refunds", "e1", 9),
	}); err != nil {
		t.Fatal(err)
	}
	if v := maxKnown("billing"); v != 3 {
		t.Errorf("effects only: %d, want 3", v)
	}

	// A registered version may have no effects yet; it still counts.
	if _, err := store.Pool().Exec(ctx, `insert into effect_versions (consumer, effect_version, state, registered_by)
		values ('billing', 5, 'executing', 'alice'), ('billing', 4, 'completed', 'alice'), ('audit', 2, 'live', 'bob')`); err != nil {
		t.Fatal(err)
	}
	for consumer, want := range map[string]int{"billing": 5, "refunds": 9, "audit": 2, "nobody": 0} {
		if v := maxKnown(consumer); v != want {
			t.Errorf("%s: %d, want %d", consumer, v, want)
		}
	}

	if _, err := store.EffectsImport(ctx, []ledger.EffectRow{effect("billing", "e3", 7)}); err != nil {
		t.Fatal(err)
	}
	if v := maxKnown("billing"); v != 7 {
		t.Errorf("effects above the registry: %d, want 7", v)
	}
}

func sampleJob(id string) ledger.Job {
	return ledger.Job{
		ID: id, Consumer: "billing", Status: "planned", ManifestDigest: "sha256:abc",
		EffectVersionFrom: 1, EffectVersionTo: 2, WriteForbidden: true,
		Reason: "replay timeouts after the INC-42 fix", Ticket: "INC-42", Stream: "DLQ_BILLING",
		StreamLastSeq: 1234, Targets: 3, ExpectedExternalCalls: 6, LedgerStateDigest: "sha256:def",
		CreatedBy: "alice", CreatedAt: time.Date(2025, 3, 4, 5, 6, 7, 123456000, time.UTC), SourceKind: jobtype.SourceDLQ,
	}
}

func TestJobsInsertAndGet(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	want := sampleJob("job-1")
	if err := ledger.JobsInsert(ctx, store.Pool(), want); err != nil {
		t.Fatal(err)
	}
	got, err := store.JobsGet(ctx, "job-1")
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(want.CreatedAt) || time.Since(got.UpdatedAt) > time.Minute || time.Since(got.UpdatedAt) < 0 {
		t.Errorf("created_at %v (want %v), updated_at %v", got.CreatedAt, want.CreatedAt, got.UpdatedAt)
	}
	got.CreatedAt, got.UpdatedAt = want.CreatedAt, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("JobsGet\n got %+v\nwant %+v", got, want)
	}

	err = ledger.JobsInsert(ctx, store.Pool(), sampleJob("job-1"))
	if !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("duplicate id: %v, want ErrConflict", err)
	}
	if n := queryInt(t, store, "select count(*) from jobs"); n != 1 {
		t.Errorf("%d jobs after the duplicate, want 1", n)
	}
}

func TestJobsInsertDefaults(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	j := sampleJob("job-2")
	j.Ticket, j.CreatedAt = "", time.Time{}
	if err := ledger.JobsInsert(ctx, store.Pool(), j); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, store, "select count(*) from jobs where ticket is null and created_at > now() - interval '1 minute'"); n != 1 {
		t.Errorf("an empty ticket and a zero created_at should store NULL and now(); %d rows match", n)
	}
	got, err := store.JobsGet(ctx, "job-2")
	if err != nil || got.Ticket != "" {
		t.Errorf("JobsGet: ticket %q, %v", got.Ticket, err)
	}
}

func TestJobsInsertInACallersTransaction(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	tx, err := store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ledger.JobsInsert(ctx, tx, sampleJob("job-3")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.JobsGet(ctx, "job-3"); !errors.Is(err, ledger.ErrJobNotFound) {
		t.Errorf("after rollback: %v, want ErrJobNotFound", err)
	}
}

func TestJobsGetMissing(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	_, err := store.JobsGet(t.Context(), "job-404")
	if !errors.Is(err, ledger.ErrJobNotFound) {
		t.Fatalf("err = %v, want ErrJobNotFound", err)
	}
	if want := "job not found: the ledger has no job \"job-404\"; `replayctl jobs` lists the jobs it has (a typo in the ID?), and `replayctl plan` records a new one"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
}

func TestAudit(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	entries := []ledger.AuditEntry{
		{Actor: "alice", JobID: "job-1", ManifestDigest: "sha256:abc", Action: "plan",
			Details: map[string]any{"targets": 3, "writeForbidden": true, "ticket": "INC-42"}},
		{Actor: "bob", JobID: "job-2", Action: "plan"},
		{At: at, Actor: "carol", JobID: "job-1", Action: "cancel"},
	}
	for _, e := range entries {
		if err := ledger.AuditInsert(ctx, store.Pool(), e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := store.AuditList(ctx, "job-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("AuditList returned %d entries, want 2: %+v", len(got), got)
	}
	first, second := got[0], got[1]
	if first.Actor != "alice" || first.Action != "plan" || first.ManifestDigest != "sha256:abc" || first.JobID != "job-1" ||
		time.Since(first.At) > time.Minute || first.ID >= second.ID {
		t.Errorf("first entry %+v", first)
	}
	// JSON numbers come back as float64.
	if want := map[string]any{"targets": float64(3), "writeForbidden": true, "ticket": "INC-42"}; !maps.Equal(first.Details, want) {
		t.Errorf("details %v, want %v", first.Details, want)
	}
	if second.Actor != "carol" || !second.At.Equal(at) || second.ManifestDigest != "" || second.Details == nil || len(second.Details) != 0 {
		t.Errorf("second entry %+v, want carol at %v with empty details", second, at)
	}
	if n := queryInt(t, store, "select count(*) from audit where job_id = 'job-2' and manifest_digest is null and details = '{}'::jsonb"); n != 1 {
		t.Errorf("an entry without digest or details should store NULL and {}; %d rows match", n)
	}
}

func TestJobTargets(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	if err := ledger.JobsInsert(ctx, store.Pool(), sampleJob("job-1")); err != nil {
		t.Fatal(err)
	}
	targets := []ledger.JobTarget{
		{JobID: "job-1", EventID: "e1", StreamSeq: 10, OriginalSubject: "billing.charge", FailureReason: "timeout"},
		{JobID: "job-1", EventID: "e2", StreamSeq: 11, OriginalSubject: "billing.charge", FailureReason: "timeout"},
		{JobID: "job-1", EventID: "e3", StreamSeq: 12, OriginalSubject: "billing.refund", FailureReason: "5xx", Status: "published"},
	}
	if n, err := ledger.JobTargetsInsert(ctx, store.Pool(), targets); err != nil || n != 3 {
		t.Fatalf("JobTargetsInsert = %d, %v", n, err)
	}
	counts, err := store.JobTargetsCount(ctx, "job-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"pending": 2, "published": 1}; !maps.Equal(counts, want) {
		t.Errorf("counts %v, want %v", counts, want)
	}

	_, err = ledger.JobTargetsInsert(ctx, store.Pool(), targets[2:])
	if !errors.Is(err, ledger.ErrConflict) || !strings.Contains(err.Error(), "record 1 job targets") {
		t.Errorf("duplicate target: %v, want ErrConflict", err)
	}

	counts, err = store.JobTargetsCount(ctx, "job-unknown")
	if err != nil || counts == nil || len(counts) != 0 {
		t.Errorf("unknown job: %v, %v; want an empty map", counts, err)
	}
}
