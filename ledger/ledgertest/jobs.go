package ledgertest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/jobtype"
)

// Querier is a pool, connection or transaction a test writes through and reads back from.
type Querier interface {
	Execer
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Job is one jobs row as plan would leave it; a zero field takes the default its comment names.
type Job struct {
	ID                    string         // required
	Consumer              string         // "billing"
	Status                jobtype.Status // shadowed
	ManifestDigest        string         // "sha256:" + ID
	CreatedBy             string         // "planner"
	WriteForbidden        bool
	ExpectedExternalCalls int64
	// PlanSignature is the planner's armoured SSHSIG signature; empty for an unsigned plan.
	PlanSignature string
}

// Defaults returns j with its defaults filled in, as InsertJob stores it.
func (j Job) Defaults() Job {
	j.Consumer = or(j.Consumer, "billing")
	j.Status = jobtype.Status(or(string(j.Status), string(jobtype.Shadowed)))
	j.ManifestDigest = or(j.ManifestDigest, "sha256:"+j.ID)
	j.CreatedBy = or(j.CreatedBy, "planner")
	return j
}

// InsertJob writes a job of versions 1 to 2 with no targets, in the status j names.
func InsertJob(t testing.TB, db Execer, j Job) {
	t.Helper()
	if j.ID == "" {
		t.Fatal("ledgertest.InsertJob: a job needs its ID")
	}
	j = j.Defaults()
	if _, err := db.Exec(context.Background(), `
insert into jobs (id, consumer, status, manifest_digest, effect_version_from, effect_version_to, write_forbidden, reason,
                  stream, stream_last_seq, targets, expected_external_calls, ledger_state_digest, created_by, created_at,
                  plan_signature)
values ($1, $2, $3, $4, 1, 2, $5, 'ledgertest', 'DLQ_BILLING', 0, 0, $6, 'sha256:none', $7, now(), nullif($8, ''))`,
		j.ID, j.Consumer, string(j.Status), j.ManifestDigest, j.WriteForbidden, j.ExpectedExternalCalls, j.CreatedBy,
		j.PlanSignature); err != nil {
		t.Fatalf("ledgertest.InsertJob: %v", err)
	}
}

// InsertShadowVerdict records a shadow verdict on jobID's manifest digest, passing or not, and
// returns its ID.
func InsertShadowVerdict(t testing.TB, db Querier, jobID, digest string, pass bool) int64 {
	t.Helper()
	verdict := "fail"
	if pass {
		verdict = "pass"
	}
	var id int64
	if err := db.QueryRow(context.Background(), `
insert into shadow_verdicts (job_id, manifest_digest, verdict, sample_seed, thresholds, totals, actor)
values ($1, $2, $3, 'ledgertest', '{}', '{}', 'shadow') returning id`, jobID, digest, verdict).Scan(&id); err != nil {
		t.Fatalf("ledgertest.InsertShadowVerdict: %v", err)
	}
	return id
}

// InsertTargets gives jobID a target in status for each of eventIDs, as plan and execute leave
// them (stream sequence, subject and failure reason are placeholders).
func InsertTargets(t testing.TB, db Execer, jobID, status string, eventIDs ...string) {
	t.Helper()
	if _, err := db.Exec(context.Background(), `
insert into job_targets (job_id, event_id, stream_seq, original_subject, failure_reason, status)
select $1, e, ordinality, 'orders.created', 'ledgertest', $2 from unnest($3::text[]) with ordinality e`,
		jobID, status, eventIDs); err != nil {
		t.Fatalf("ledgertest.InsertTargets: %v", err)
	}
}

// TargetStatuses returns the status of each of jobID's targets by event ID.
func TargetStatuses(t testing.TB, db Querier, jobID string) map[string]string {
	t.Helper()
	rows, err := db.Query(context.Background(), `select event_id, status from job_targets where job_id = $1`, jobID)
	if err != nil {
		t.Fatalf("ledgertest.TargetStatuses: %v", err)
	}
	out := map[string]string{}
	var id, status string
	if _, err := pgx.ForEachRow(rows, []any{&id, &status}, func() error { out[id] = status; return nil }); err != nil {
		t.Fatalf("ledgertest.TargetStatuses: %v", err)
	}
	return out
}

// AuditActions returns the action of every audit entry, oldest first.
func AuditActions(t testing.TB, db Querier) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), `select action from audit order by id`)
	if err != nil {
		t.Fatalf("ledgertest.AuditActions: %v", err)
	}
	actions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("ledgertest.AuditActions: %v", err)
	}
	return actions
}
