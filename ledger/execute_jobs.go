package ledger

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/jobtype"
)

// JobTransition moves a job from one of From to To, recording who did it and why.
type JobTransition struct {
	ID     string
	From   []jobtype.Status
	To     jobtype.Status
	Reason string
	By     string
}

// The CTE "previous" reads the snapshot before the update, so a refusal can name the status
// found. Empty reason and actor are stored as NULL.
const jobsTransition = `
with previous as (select status from jobs where id = $1),
     changed as (update jobs
                    set status = $3, status_reason = nullif($4, ''), status_by = nullif($5, ''),
                        status_at = now(), updated_at = now()
                  where id = $1 and status = any($2)
              returning 1)
select (select status from previous), exists (select 1 from changed)`

// JobsTransition applies t through q and sets status_reason, status_by and status_at = now().
// A missing job matches ErrJobNotFound; a job in another status matches ErrJobStatus, naming its
// status, and is left unchanged.
func JobsTransition(ctx context.Context, q Querier, t JobTransition) error {
	var current *string
	var changed bool
	if err := q.QueryRow(ctx, jobsTransition, t.ID, t.From, t.To, t.Reason, t.By).Scan(&current, &changed); err != nil {
		return fmt.Errorf("set job %s to %s: %w", t.ID, t.To, err)
	}
	if current == nil {
		return fmt.Errorf("%w: the ledger has no job %q; `replayctl jobs` lists the jobs it has (a typo in the ID?), and `replayctl plan` records a new one", ErrJobNotFound, t.ID)
	}
	if !changed {
		return fmt.Errorf("%w: job %s is %s, not one of %v, so it cannot become %s", ErrJobStatus, t.ID, *current, t.From, t.To)
	}
	return nil
}

// updated_at is left alone: it tracks the job's status, and the run state is rewritten every few
// seconds while the job runs.
const jobsSetRunState = `update jobs set run_state = $2::jsonb, run_state_at = now() where id = $1`

// JobsSetRunState stores an executor's live state of jobID (rate, published, throttling) as
// run_state, with run_state_at = now(). status reads it from another process. An empty
// state clears run_state; a missing job matches ErrJobNotFound.
func (s *Store) JobsSetRunState(ctx context.Context, jobID string, state json.RawMessage) error {
	var value any
	if len(state) > 0 {
		value = string(state)
	}
	tag, err := s.pool.Exec(ctx, jobsSetRunState, jobID, value)
	if err != nil {
		return fmt.Errorf("store the run state of job %s: %w", jobID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: the ledger has no job %q to store a run state for", ErrJobNotFound, jobID)
	}
	return nil
}

const jobsActiveForConsumer = `
select ` + jobColumns + `
  from jobs
 where consumer = $1 and id <> $2 and status in ('executing', 'paused')
 order by created_at, id`

// JobsActiveForConsumer returns the jobs of consumer other than exceptJobID whose status is
// executing or paused, oldest first (by created_at, then ID).
func JobsActiveForConsumer(ctx context.Context, q Querier, consumer, exceptJobID string) ([]Job, error) {
	rows, err := q.Query(ctx, jobsActiveForConsumer, consumer, exceptJobID)
	if err != nil {
		return nil, fmt.Errorf("read the executing and paused jobs of consumer %s: %w", consumer, err)
	}
	jobs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Job, error) { return jobScan(row) })
	if err != nil {
		return nil, fmt.Errorf("read the executing and paused jobs of consumer %s: %w", consumer, err)
	}
	return jobs, nil
}

// JobsActiveForConsumer is JobsActiveForConsumer on the store's pool.
func (s *Store) JobsActiveForConsumer(ctx context.Context, consumer, exceptJobID string) ([]Job, error) {
	return JobsActiveForConsumer(ctx, s.pool, consumer, exceptJobID)
}

const lockConsumerExecutions = `select pg_advisory_xact_lock(hashtextextended(current_schema() || ':replayctl.execute.consumer:' || $1, 0))`

// LockConsumerExecutions takes a transaction-scoped advisory lock on consumer through q (a
// transaction), so two executors starting jobs of one consumer check JobsActiveForConsumer one
// after the other. It waits for the lock (up to the statement timeout); outside a transaction the
// lock would be released at once and protects nothing.
func LockConsumerExecutions(ctx context.Context, q Querier, consumer string) error {
	if _, err := q.Exec(ctx, lockConsumerExecutions, consumer); err != nil {
		return fmt.Errorf("lock the executions of consumer %s: %w", consumer, err)
	}
	return nil
}

const effectVersionsSetState = `
update effect_versions set state = $5
 where consumer = $1 and effect_version = $2 and job_id = $3 and state = any($4)`

// EffectVersionsSetState moves consumer's version registered for jobID from one of from to to,
// through q, and reports whether a row changed.
func EffectVersionsSetState(ctx context.Context, q Querier, consumer string, version int, jobID string, from []string, to string) (bool, error) {
	tag, err := q.Exec(ctx, effectVersionsSetState, consumer, version, jobID, from, to)
	if err != nil {
		return false, fmt.Errorf("set effect version %d of consumer %s (job %s) to %s: %w", version, consumer, jobID, to, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Every arm reads at most a few entries of effects_consumer_version_job_idx or the registry, so a
// job with a million rows under $2 costs no scan of them: max() below and above $2 reads one entry
// each, and whether a row under $2 is not the job's is read off the two ends of the version's
// job_id range (descending with nulls first finds a NULL job_id before any other; ascending, the
// smallest). greatest() skips NULLs, so a consumer with nothing else yields the final 0.
const effectVersionsHighestOutsideJob = `
select greatest(
         (select max(effect_version) from effects where consumer = $1 and effect_version < $2),
         (select max(effect_version) from effects where consumer = $1 and effect_version > $2),
         (select $2
           where (select job_id is null or job_id <> $3 from effects
                   where consumer = $1 and effect_version = $2 order by job_id desc nulls first limit 1)
              or (select job_id <> $3 from effects
                   where consumer = $1 and effect_version = $2 order by job_id limit 1)),
         (select max(effect_version) from effect_versions
           where consumer = $1 and (effect_version <> $2 or job_id is distinct from $3)),
         0)`

// EffectVersionsHighestOutsideJob returns the highest effect version the ledger knows for
// consumer (effects and effect_versions) apart from jobID's own: version's registry row for
// jobID and its effects rows under version with job_id = jobID. 0 when there is none.
func (s *Store) EffectVersionsHighestOutsideJob(ctx context.Context, consumer string, version int, jobID string) (int, error) {
	var v int
	if err := s.pool.QueryRow(ctx, effectVersionsHighestOutsideJob, consumer, version, jobID).Scan(&v); err != nil {
		return 0, fmt.Errorf("read the highest effect version of consumer %s outside job %s: %w", consumer, jobID, err)
	}
	return v, nil
}

// ExecuteLock takes jobID's execute lock, a session advisory lock held on a dedicated connection
// until release is called (or the process dies), so two executors of one job never interleave.
// A lock already held matches ErrExecuteRunning; it does not wait.
func (s *Store) ExecuteLock(ctx context.Context, jobID string) (release func(), err error) {
	return s.sessionLock(ctx, executeLockKey(jobID), executeLockAction(jobID), executeRunning(jobID))
}

const jobsLedgerIdentity = `select coalesce(ledger_identity, ''), replayctl_ledger_identity() from jobs where id = $1`

// JobsLedgerIdentity returns the identity of the ledger jobID was planned in ("" for a job planned
// before jobs recorded it) and this ledger's: they differ in a restored copy.
func (s *Store) JobsLedgerIdentity(ctx context.Context, jobID string) (planned, current string, err error) {
	err = s.pool.QueryRow(ctx, jobsLedgerIdentity, jobID).Scan(&planned, &current)
	if err != nil {
		return "", "", fmt.Errorf("read the ledger identity of job %s: %w", jobID, translate(err))
	}
	return planned, current, nil
}
