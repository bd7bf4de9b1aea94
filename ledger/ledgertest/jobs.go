package ledgertest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/jobtype"
)

// Querier is a pool, connection or transaction a test writes through and reads an ID back from.
type Querier interface {
	Execer
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
