package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replayctl/replayctl/jobtype"
)

// Querier is what the package-level queries need: pgx.Tx, *pgxpool.Pool and *pgxpool.Conn all
// satisfy it, so a caller can run them inside its own transaction.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

var (
	_ Querier = pgx.Tx(nil)
	_ Querier = (*pgxpool.Pool)(nil)
	_ Querier = (*pgxpool.Conn)(nil)
)

// greatest() skips NULLs, so a consumer with no rows in either table yields the final 0.
const effectVersionsMaxKnown = `
select greatest((select max(effect_version) from effects where consumer = $1),
                (select max(effect_version) from effect_versions where consumer = $1),
                0)`

// EffectVersionsMaxKnown returns the highest effect version the ledger knows for consumer, from
// its effects and from the version registry (a registered version may have no effects yet), or 0.
func (s *Store) EffectVersionsMaxKnown(ctx context.Context, consumer string) (int, error) {
	var v int
	if err := s.pool.QueryRow(ctx, effectVersionsMaxKnown, consumer).Scan(&v); err != nil {
		return 0, fmt.Errorf("read the highest effect version of consumer %q: %w", consumer, err)
	}
	return v, nil
}

// Job is a row of jobs: one planned replay and where it stands.
type Job struct {
	ID                string
	Consumer          string
	Status            jobtype.Status
	ManifestDigest    string
	EffectVersionFrom int
	EffectVersionTo   int
	WriteForbidden    bool
	// SourceKind is jobtype.SourceDLQ or jobtype.SourceBackfill; an empty one is recorded as jobtype.SourceDLQ.
	SourceKind            string
	Reason                string
	Ticket                string
	Stream                string
	StreamLastSeq         int64
	Targets               int64
	ExpectedExternalCalls int64
	LedgerStateDigest     string
	CreatedBy             string
	CreatedAt             time.Time
	UpdatedAt             time.Time
	// StatusReason, StatusBy and StatusAt record the last JobsTransition: why, by whom, when
	// (empty and zero until the first one).
	StatusReason string
	StatusBy     string
	StatusAt     time.Time
	// RunState is the executor's live state as JSON (nil until it wrote one), stored at RunStateAt.
	RunState   json.RawMessage
	RunStateAt time.Time
	// Pace is the rate and in-flight cap its executor keeps to (JobsSetPace); nil fields are not
	// set, and the executor's flags or defaults hold.
	Pace JobPace
	// PlanSignature is the planner's SSHSIG signature over the job and its manifest digest
	// (plan --sign-key), armoured; empty when the plan was not signed.
	PlanSignature string
}

// JobPace is a job's publish rate (per second, 0 for no limit) and in-flight cap; nil is not set.
type JobPace struct {
	Rate        *float64
	MaxInFlight *int
}

// MarshalJSON shows the pace a run would keep to without flags: an unset rate is 0 (no limit), an
// unset cap jobtype.DefaultMaxInFlight. Every --json gives numbers here, never null.
func (p JobPace) MarshalJSON() ([]byte, error) {
	rate, inFlight := 0.0, jobtype.DefaultMaxInFlight
	if p.Rate != nil {
		rate = *p.Rate
	}
	if p.MaxInFlight != nil {
		inFlight = *p.MaxInFlight
	}
	return json.Marshal(struct {
		Rate        float64 `json:"rate"`
		MaxInFlight int     `json:"maxInFlight"`
	}{rate, inFlight})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (p *JobPace) UnmarshalJSON(data []byte) error {
	var v struct {
		Rate        *float64 `json:"rate"`
		MaxInFlight *int     `json:"maxInFlight"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	p.Rate, p.MaxInFlight = v.Rate, v.MaxInFlight
	return nil
}

// A zero CreatedAt becomes now(); UpdatedAt always starts at now().
const jobsInsert = `
insert into jobs (id, consumer, status, manifest_digest, effect_version_from, effect_version_to,
                  write_forbidden, reason, ticket, stream, stream_last_seq, targets,
                  expected_external_calls, ledger_state_digest, created_by, created_at, source_kind, plan_signature)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, coalesce($16::timestamptz, now()),
        coalesce($17, 'dlq'), nullif($18, ''))`

// JobsInsert records j through q. A job whose ID is already recorded returns an error matching
// ErrConflict. An empty Ticket is stored as NULL.
func JobsInsert(ctx context.Context, q Querier, j Job) error {
	_, err := q.Exec(ctx, jobsInsert, j.ID, j.Consumer, j.Status, j.ManifestDigest, j.EffectVersionFrom,
		j.EffectVersionTo, j.WriteForbidden, j.Reason, nullable(j.Ticket), j.Stream, j.StreamLastSeq, j.Targets,
		j.ExpectedExternalCalls, j.LedgerStateDigest, j.CreatedBy, nullableTime(j.CreatedAt), nullable(j.SourceKind), j.PlanSignature)
	if err != nil {
		return fmt.Errorf("record job %s: %w", j.ID, translate(err))
	}
	return nil
}

// jobColumns is the select list jobScan reads, shared by every query returning whole jobs.
const jobColumns = `
       id, consumer, status, manifest_digest, effect_version_from, effect_version_to, write_forbidden,
       reason, coalesce(ticket, ''), stream, stream_last_seq, targets, expected_external_calls,
       ledger_state_digest, created_by, created_at, updated_at,
       coalesce(status_reason, ''), coalesce(status_by, ''), status_at, run_state, run_state_at, source_kind,
       pace_rate, pace_max_in_flight, coalesce(plan_signature, '')`

const jobsGet = `select ` + jobColumns + ` from jobs where id = $1`

// JobsGet returns the job with id, or an error matching ErrJobNotFound. A read, so it is sent
// again after a lost connection.
func (s *Store) JobsGet(ctx context.Context, id string) (Job, error) {
	var j Job
	_, err := retryLostConnection(ctx, func() (err error) {
		j, err = jobScan(s.pool.QueryRow(ctx, jobsGet, id))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Job{}, fmt.Errorf("%w: the ledger has no job %q; `replayctl jobs` lists the jobs it has (a typo in the ID?), and `replayctl plan` records a new one", ErrJobNotFound, id)
	}
	if err != nil {
		return Job{}, fmt.Errorf("read job %s: %w", id, err)
	}
	return j, nil
}

// jobScan reads one row of jobColumns, then any columns after them into extra; NULL times read as
// zero and a NULL run state as nil.
func jobScan(row pgx.Row, extra ...any) (Job, error) {
	var j Job
	var statusAt, runStateAt *time.Time
	var runState []byte
	dest := append([]any{&j.ID, &j.Consumer, &j.Status, &j.ManifestDigest,
		&j.EffectVersionFrom, &j.EffectVersionTo, &j.WriteForbidden, &j.Reason, &j.Ticket, &j.Stream,
		&j.StreamLastSeq, &j.Targets, &j.ExpectedExternalCalls, &j.LedgerStateDigest, &j.CreatedBy,
		&j.CreatedAt, &j.UpdatedAt, &j.StatusReason, &j.StatusBy, &statusAt, &runState, &runStateAt, &j.SourceKind,
		&j.Pace.Rate, &j.Pace.MaxInFlight, &j.PlanSignature}, extra...)
	if err := row.Scan(dest...); err != nil {
		return Job{}, err
	}
	if statusAt != nil {
		j.StatusAt = *statusAt
	}
	if runStateAt != nil {
		j.RunStateAt = *runStateAt
	}
	if runState != nil {
		j.RunState = json.RawMessage(runState)
	}
	return j, nil
}

// AuditEntry is a row of audit: who did what to which job, with the figures that mattered then.
type AuditEntry struct {
	ID             int64
	At             time.Time
	Actor          string
	JobID          string
	ManifestDigest string
	Action         string
	// Details holds IDs, hashes and counts, never payloads; it is stored as a JSON object.
	Details map[string]any
}

// A zero At becomes now(); nil Details become {}. audit_append (migration 0029) links the entry
// into its consumer's hash chain under the chain's lock and records the database role.
const auditInsert = `select audit_append($1::timestamptz, $2, $3, $4, $5, $6::jsonb, '')`

// AuditInsert appends e through q, so an action and its audit entry can commit together. ID is
// assigned by the database; empty JobID and ManifestDigest are stored as NULL. The entry joins
// the hash chain of its consumer (the job's, or details' "consumer").
func AuditInsert(ctx context.Context, q Querier, e AuditEntry) error {
	var details any
	if e.Details != nil {
		details = e.Details
	}
	_, err := q.Exec(ctx, auditInsert, nullableTime(e.At), e.Actor, nullable(e.JobID), nullable(e.ManifestDigest), e.Action, details)
	if err != nil {
		return fmt.Errorf("audit %s by %s: %w", e.Action, e.Actor, translate(err))
	}
	return nil
}

const auditList = `
select id, at, actor, coalesce(job_id, ''), coalesce(manifest_digest, ''), action, details
  from audit
 where job_id = $1
 order by id`

// AuditList returns the audit entries of jobID, oldest first.
func (s *Store) AuditList(ctx context.Context, jobID string) ([]AuditEntry, error) {
	rows, err := s.pool.Query(ctx, auditList, jobID)
	if err != nil {
		return nil, fmt.Errorf("read the audit log of job %s: %w", jobID, err)
	}
	entries, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		err := row.Scan(&e.ID, &e.At, &e.Actor, &e.JobID, &e.ManifestDigest, &e.Action, &e.Details)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the audit log of job %s: %w", jobID, err)
	}
	return entries, nil
}

// JobTarget is a row of job_targets: one event a job replays and how far it got.
type JobTarget struct {
	JobID           string
	EventID         string
	StreamSeq       int64
	OriginalSubject string
	FailureReason   string
	// Status is one of pending, shadowed, published, completed, skipped, failed, uncertain.
	Status string
}

var jobTargetsColumns = []string{"job_id", "event_id", "stream_seq", "original_subject", "failure_reason", "status"}

// JobTargetsInsert copies targets in with one COPY through q; an empty Status is stored as
// pending. A target already recorded for its job fails the whole copy with ErrConflict.
func JobTargetsInsert(ctx context.Context, q Querier, targets []JobTarget) (int64, error) {
	n, err := q.CopyFrom(ctx, pgx.Identifier{"job_targets"}, jobTargetsColumns, pgx.CopyFromSlice(len(targets), func(i int) ([]any, error) {
		t := targets[i]
		status := t.Status
		if status == "" {
			status = "pending"
		}
		return []any{t.JobID, t.EventID, t.StreamSeq, t.OriginalSubject, t.FailureReason, status}, nil
	}))
	if err != nil {
		return n, fmt.Errorf("record %d job targets: %w", len(targets), translate(err))
	}
	return n, nil
}

const jobTargetsCount = `select status, count(*) from job_targets where job_id = $1 group by status`

// JobTargetsCount returns how many targets of jobID are in each status; statuses without targets
// are absent, and an unknown job yields an empty map. A read, so it is sent again after a lost
// connection.
func (s *Store) JobTargetsCount(ctx context.Context, jobID string) (map[string]int64, error) {
	var counts map[string]int64
	_, err := retryLostConnection(ctx, func() error {
		rows, err := s.pool.Query(ctx, jobTargetsCount, jobID)
		if err != nil {
			return err
		}
		counts = map[string]int64{}
		var status string
		var n int64
		_, err = pgx.ForEachRow(rows, []any{&status, &n}, func() error {
			counts[status] = n
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("count the targets of job %s: %w", jobID, err)
	}
	return counts, nil
}

func nullableTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}
