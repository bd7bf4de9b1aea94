package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/fault"
)

var (
	// ErrJobStatus means a job was not in a status the requested transition starts from.
	ErrJobStatus = errors.New("job is not in the expected status")

	// ErrNoVerdict means a job has no shadow verdict recorded yet.
	ErrNoVerdict = errors.New("no shadow verdict recorded")

	// ErrShadowRunning means another shadow run of the same job holds its lock.
	ErrShadowRunning = fault.New(fault.Refused, "another shadow run of this job is in progress")
)

// ShadowTarget is a job target as the shadow pass reads it.
type ShadowTarget struct {
	EventID       string
	StreamSeq     uint64
	FailureReason string
	// PayloadHash is the payload fingerprint at plan time; empty for targets planned before
	// migration 0002.
	PayloadHash string
}

const shadowTargetColumns = `event_id, stream_seq, failure_reason, coalesce(payload_hash, '')`

// jobTargetsSample ranks each failure reason's targets by sha256(seed || event_id), a stable
// pseudo-random order, and keeps the first quota of each.
const jobTargetsSample = `
with strata as (select * from unnest($3::text[], $4::text[]) as s(failure_reason, stratum)),
     quota as (select * from unnest($5::text[], $6::int[]) as q(stratum, n))
select ` + shadowTargetColumns + `
  from (select t.*, s.stratum, row_number() over (partition by s.stratum
                                       order by sha256(convert_to($2::text || t.event_id, 'UTF8')), t.event_id) as rn
          from job_targets t
          join strata s using (failure_reason)
         where t.job_id = $1) ranked
  join quota using (stratum)
 where ranked.rn <= quota.n
 order by stratum collate "C", event_id collate "C"`

// JobTargetsSample returns the shadow sample of jobID: for each stratum in quotas (a failure
// group; stratumOf maps each target's failure reason to it), the quota targets with the smallest
// sha256(seed || event_id), sorted by stratum then event ID. The same seed, strata and quotas
// always yield the same targets.
func (s *Store) JobTargetsSample(ctx context.Context, jobID, seed string, quotas map[string]int, stratumOf map[string]string) ([]ShadowTarget, error) {
	reasons, strata := make([]string, 0, len(stratumOf)), make([]string, 0, len(stratumOf))
	for reason, stratum := range stratumOf {
		reasons, strata = append(reasons, reason), append(strata, stratum)
	}
	names := make([]string, 0, len(quotas))
	counts := make([]int32, 0, len(quotas))
	for stratum, n := range quotas {
		names = append(names, stratum)
		counts = append(counts, int32(n))
	}
	rows, err := s.pool.Query(ctx, jobTargetsSample, jobID, seed, reasons, strata, names, counts)
	if err != nil {
		return nil, fmt.Errorf("choose the shadow sample of job %s: %w", jobID, err)
	}
	targets, err := pgx.CollectRows(rows, shadowTargetRow)
	if err != nil {
		return nil, fmt.Errorf("choose the shadow sample of job %s: %w", jobID, err)
	}
	return targets, nil
}

const jobTargetsPageBySeq = `
select ` + shadowTargetColumns + `
  from job_targets
 where job_id = $1 and stream_seq > $2
 order by stream_seq
 limit $3`

// JobTargetsPageBySeq returns up to limit targets of jobID with a stream sequence above afterSeq,
// in stream order: a keyset page, so a pass over a million targets holds one page at a time.
func (s *Store) JobTargetsPageBySeq(ctx context.Context, jobID string, afterSeq uint64, limit int) ([]ShadowTarget, error) {
	rows, err := s.pool.Query(ctx, jobTargetsPageBySeq, jobID, int64(afterSeq), limit)
	if err != nil {
		return nil, fmt.Errorf("read the targets of job %s after stream sequence %d: %w", jobID, afterSeq, err)
	}
	targets, err := pgx.CollectRows(rows, shadowTargetRow)
	if err != nil {
		return nil, fmt.Errorf("read the targets of job %s after stream sequence %d: %w", jobID, afterSeq, err)
	}
	return targets, nil
}

func shadowTargetRow(row pgx.CollectableRow) (ShadowTarget, error) {
	var t ShadowTarget
	var seq int64
	err := row.Scan(&t.EventID, &seq, &t.FailureReason, &t.PayloadHash)
	t.StreamSeq = uint64(seq)
	return t, err
}

// Original is an event's latest completed (or reconciled) effect under an older version that still
// has a result to compare with (a retained body or a hash). A write-forbidden replay's row is
// never an original: its effects were not made.
type Original struct {
	EffectVersion int
	ResultHash    string
	// ResultBody is nil once the body was pruned or replay_until has passed: only the hash is
	// left to compare.
	ResultBody  json.RawMessage
	EffectCount int
	// OutcomeKind is "business" for a terminal business failure, empty for success: it says
	// whether the original failed even once its body is pruned.
	OutcomeKind string
}

// The primary key (consumer, event_id, effect_version) serves both the filter and the order. The
// version is compared as effect_version + 0 so no plan can range over (consumer, effect_version)
// instead: at 5 M rows of version 1 that read the consumer's history, 3 s a batch (issue 40). A
// body is retained while replay_until is unset or in the future, by the database's clock.
const effectsOriginals = `
select distinct on (event_id)
       event_id, effect_version, coalesce(result_hash, ''),
       case when retained then body::text end,
       effect_count, coalesce(outcome_kind, '')
  from (select *, body is not null and (replay_until is null or replay_until > now()) as retained
          from (select effects.*, ` + effectBodyOf + ` as body from effects
         where consumer = $1 and event_id = any($2) and effect_version + 0 < $3
           and state in ('completed', 'reconciled') and not write_forbidden) effects) e
 where retained or result_hash is not null
 order by event_id, effect_version desc`

// EffectsOriginals returns, by event ID, the original of each of eventIDs that has one: consumer's
// latest completed or reconciled effect below belowVersion with a retained body or a hash. One
// query for the whole slice.
func (s *Store) EffectsOriginals(ctx context.Context, consumer string, eventIDs []string, belowVersion int) (map[string]Original, error) {
	rows, err := s.pool.Query(ctx, effectsOriginals, consumer, eventIDs, belowVersion)
	if err != nil {
		return nil, fmt.Errorf("read the original results of %d events of consumer %q: %w", len(eventIDs), consumer, err)
	}
	out := make(map[string]Original, len(eventIDs))
	var eventID string
	var o Original
	var body *string
	_, err = pgx.ForEachRow(rows, []any{&eventID, &o.EffectVersion, &o.ResultHash, &body, &o.EffectCount, &o.OutcomeKind}, func() error {
		o.ResultBody = nil
		if body != nil {
			o.ResultBody = json.RawMessage(*body)
		}
		out[eventID] = o
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the original results of %d events of consumer %q: %w", len(eventIDs), consumer, err)
	}
	return out, nil
}

// ShadowOutcome is one target's shadow outcome as job_targets stores it. It holds no payload and
// no result body.
type ShadowOutcome struct {
	EventID string
	// Status is ok, error, timeout, no_responder, source_missing or refused.
	Status string
	// Comparison is identical, changed or no_original for an ok reply, failed or failed_again for
	// an ok reply that is a terminal business failure, empty otherwise.
	Comparison string
	// ComparedOn is body or hash when a comparison was made, empty otherwise.
	ComparedOn string
	ResultHash string
	// EffectCount is stored for replies (ok and error) only.
	EffectCount int
	Error       string
	ShadowedAt  time.Time
}

// A target whose shadow succeeded becomes shadowed; any other outcome puts it back to pending, so
// a second shadow run never leaves a stale "shadowed" behind a new failure.
const jobTargetsRecordShadow = `
update job_targets t
   set shadow_status       = o.status,
       shadow_comparison   = nullif(o.comparison, ''),
       shadow_compared_on  = nullif(o.compared_on, ''),
       shadow_result_hash  = nullif(o.result_hash, ''),
       shadow_effect_count = case when o.status in ('ok', 'error') then o.effect_count end,
       shadow_error        = nullif(o.error, ''),
       shadowed_at         = o.at,
       status              = case when o.status = 'ok' then 'shadowed' else 'pending' end,
       updated_at          = now()
  from unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[], $9::timestamptz[])
       as o(event_id, status, comparison, compared_on, result_hash, effect_count, error, at)
 where t.job_id = $1 and t.event_id = o.event_id and t.status in ('pending', 'shadowed')`

// JobTargetsRecordShadow stores outcomes on jobID's targets in one statement. A target that is
// not pending or shadowed (the job moved on to execute) is left alone and reported as an error.
func (s *Store) JobTargetsRecordShadow(ctx context.Context, jobID string, outcomes []ShadowOutcome) error {
	if len(outcomes) == 0 {
		return nil
	}
	n := len(outcomes)
	ids, statuses, comparisons, comparedOn, hashes, errs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	counts, at := make([]int32, n), make([]time.Time, n)
	for i, o := range outcomes {
		ids[i], statuses[i], comparisons[i], comparedOn[i], hashes[i], errs[i] = o.EventID, o.Status, o.Comparison, o.ComparedOn, o.ResultHash, o.Error
		counts[i], at[i] = int32(o.EffectCount), o.ShadowedAt
	}
	tag, err := s.pool.Exec(ctx, jobTargetsRecordShadow, jobID, ids, statuses, comparisons, comparedOn, hashes, counts, errs, at)
	if err != nil {
		return fmt.Errorf("store %d shadow outcomes of job %s: %w", n, jobID, err)
	}
	if tag.RowsAffected() != int64(n) {
		return fmt.Errorf("%w: stored %d of %d shadow outcomes of job %s; the others are no longer pending or shadowed (has the job started executing?)",
			ErrJobStatus, tag.RowsAffected(), n, jobID)
	}
	return nil
}

const jobTargetsClearShadow = `
update job_targets
   set shadow_status = null, shadow_comparison = null, shadow_compared_on = null, shadow_result_hash = null,
       shadow_effect_count = null, shadow_error = null, shadowed_at = null, status = 'pending', updated_at = now()
 where job_id = $1 and shadow_status is not null and status in ('pending', 'shadowed')`

// JobTargetsClearShadow forgets the previous shadow run's outcomes of jobID through q, so that
// after a new run, interrupted or not, every stored outcome belongs to it. A job never shadowed
// has nothing to clear, and costs no write.
func JobTargetsClearShadow(ctx context.Context, q Querier, jobID string) error {
	if _, err := q.Exec(ctx, jobTargetsClearShadow, jobID); err != nil {
		return fmt.Errorf("clear the previous shadow outcomes of job %s: %w", jobID, err)
	}
	return nil
}

// ShadowVerdict is a row of shadow_verdicts: one shadow run's verdict bound to the manifest digest
// it shadowed.
type ShadowVerdict struct {
	ID             int64
	JobID          string
	ManifestDigest string
	Pass           bool
	Seed           string
	// Thresholds and Totals are the shadow package's JSON, stored as given.
	Thresholds json.RawMessage
	Totals     json.RawMessage
	Reasons    []string
	ReportPath string
	Actor      string
	CreatedAt  time.Time
}

const shadowVerdictsInsert = `
insert into shadow_verdicts (job_id, manifest_digest, verdict, sample_seed, thresholds, totals, reasons, report_path, actor)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`

// ShadowVerdictsInsert records v through q, so the verdict, the job's status and the audit entry
// can commit together. ID and CreatedAt are assigned by the database.
func ShadowVerdictsInsert(ctx context.Context, q Querier, v ShadowVerdict) error {
	verdict := "fail"
	if v.Pass {
		verdict = "pass"
	}
	reasons := v.Reasons
	if reasons == nil {
		reasons = []string{}
	}
	_, err := q.Exec(ctx, shadowVerdictsInsert, v.JobID, v.ManifestDigest, verdict, v.Seed, v.Thresholds, v.Totals,
		reasons, nullable(v.ReportPath), v.Actor)
	if err != nil {
		return fmt.Errorf("record the shadow verdict of job %s: %w", v.JobID, translate(err))
	}
	return nil
}

const shadowVerdictsLatest = `
select id, job_id, manifest_digest, verdict = 'pass', sample_seed, thresholds, totals, reasons,
       coalesce(report_path, ''), actor, created_at
  from shadow_verdicts
 where job_id = $1
 order by id desc
 limit 1`

// ShadowVerdictsLatest returns the most recent shadow verdict of jobID, or an error matching
// ErrNoVerdict when the job was never shadowed to the end.
func (s *Store) ShadowVerdictsLatest(ctx context.Context, jobID string) (ShadowVerdict, error) {
	var v ShadowVerdict
	err := s.pool.QueryRow(ctx, shadowVerdictsLatest, jobID).Scan(&v.ID, &v.JobID, &v.ManifestDigest, &v.Pass, &v.Seed,
		&v.Thresholds, &v.Totals, &v.Reasons, &v.ReportPath, &v.Actor, &v.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return ShadowVerdict{}, fmt.Errorf("%w: job %s has no shadow verdict; run `replayctl shadow` on its manifest first", ErrNoVerdict, jobID)
	}
	if err != nil {
		return ShadowVerdict{}, fmt.Errorf("read the shadow verdict of job %s: %w", jobID, err)
	}
	return v, nil
}

// ShadowLock takes jobID's shadow lock, a session advisory lock held on a dedicated connection
// until release is called (or the process dies), so two shadow runs of one job never interleave
// their outcomes. A lock already held matches ErrShadowRunning.
func (s *Store) ShadowLock(ctx context.Context, jobID string) (release func(), err error) {
	return s.sessionLock(ctx, shadowLockKey(jobID), shadowLockAction(jobID), shadowRunning(jobID))
}

// ShadowStart is what a shadow run's start changes: the job's status (Transition, the job
// package's job.Transition(job.EventShadow, ...)), its targets' shadow outcomes, and the audit
// entry.
type ShadowStart struct {
	Transition JobTransition
	Audit      AuditEntry
}

// ShadowStart marks the job shadowing and forgets the previous run's outcomes, with the audit
// entry, in one transaction. A job in none of Transition.From matches ErrJobStatus and is left
// unchanged.
func (s *Store) ShadowStart(ctx context.Context, st ShadowStart) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := JobsTransition(ctx, tx, st.Transition); err != nil {
			return err
		}
		if err := JobTargetsClearShadow(ctx, tx, st.Transition.ID); err != nil {
			return err
		}
		return AuditInsert(ctx, tx, st.Audit)
	})
}

// ShadowRecordVerdict stores v, moves its job with t (shadowing to shadowed), and
// appends the audit entry, in one transaction: execute never sees a verdict whose job is still
// shadowing, nor a shadowed job without its verdict.
func (s *Store) ShadowRecordVerdict(ctx context.Context, v ShadowVerdict, t JobTransition, audit AuditEntry) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := ShadowVerdictsInsert(ctx, tx, v); err != nil {
			return err
		}
		if err := JobsTransition(ctx, tx, t); err != nil {
			return fmt.Errorf("record the shadow verdict of job %s: %w", v.JobID, err)
		}
		return AuditInsert(ctx, tx, audit)
	})
}

// ShadowStopped moves the job of a shadow run that stopped before its verdict back with t (from
// shadowing to the status the run started from) and appends the audit entry, in one transaction.
// The run's outcomes so far stay; the next run clears them. A job no longer shadowing matches
// ErrJobStatus and is left unchanged.
func (s *Store) ShadowStopped(ctx context.Context, t JobTransition, audit AuditEntry) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := JobsTransition(ctx, tx, t); err != nil {
			return err
		}
		return AuditInsert(ctx, tx, audit)
	})
}
