package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The queries `replayctl execute` and `status` run: this file holds the targets' publishing and
// outcomes and the job's effect counts; execute_drift.go the drift check since plan;
// execute_jobs.go the job's status, run state, versions and locks. Every bulk write is one
// statement over arrays, never one round trip per event.

var (
	// ErrExecuteRunning means another executor of the same job holds its lock.
	ErrExecuteRunning = errors.New("another executor of this job is running")
)

// Target statuses of job_targets that execute reads and writes.
const (
	TargetPending   = "pending"
	TargetShadowed  = "shadowed"
	TargetPublished = "published"
	TargetCompleted = "completed"
	TargetSkipped   = "skipped"
	TargetFailed    = "failed"
	TargetUncertain = "uncertain"
)

// ExecTarget is a job target as execute publishes it.
type ExecTarget struct {
	EventID         string
	StreamSeq       uint64
	OriginalSubject string
	// PayloadHash is the payload fingerprint at plan time; empty for targets planned before
	// migration 0002.
	PayloadHash string
}

// A keyset page over job_targets_job_seq_idx; each candidate costs one primary-key probe of
// effects, so a resumed run skips what its previous run's rows already cover. "effect_version + 0"
// keeps the planner off the (consumer, effect_version, job_id) index: a new version has no
// statistics when a run starts, and with an estimate of one row the planner compared every
// candidate with every row the version already had (1.3 s a page at 5,000 targets, quadratic).
const jobTargetsPageToPublish = `
select t.event_id, t.stream_seq, t.original_subject, coalesce(t.payload_hash, '')
  from job_targets t
 where t.job_id = $1 and t.stream_seq > $4 and t.status in ('pending', 'shadowed', 'published')
   and not exists (select from effects e
                    where e.consumer = $2 and e.event_id = t.event_id and e.effect_version + 0 = $3)
 order by t.stream_seq
 limit $5`

// The same page without the probe, for a run that knows no target ahead of it has a row: the
// probe was most of the page's cost (7 of 8 ms per 1,000 targets).
const jobTargetsPageToPublishNoRows = `
select t.event_id, t.stream_seq, t.original_subject, coalesce(t.payload_hash, '')
  from job_targets t
 where t.job_id = $1 and t.stream_seq > $2 and t.status in ('pending', 'shadowed', 'published')
 order by t.stream_seq
 limit $3`

// PublishPage asks for one page of the targets a run still has to publish.
type PublishPage struct {
	JobID    string
	Consumer string
	Version  int
	// AfterSeq is the stream sequence of the last target already read (0 for the first page).
	AfterSeq uint64
	Limit    int
	// NoRowsAhead says the caller knows that no target after AfterSeq has an effects row under
	// Version: the first run of a job, whose version had no row for the job when it started and
	// whose own publishes are all behind AfterSeq. The page then skips the per-target probe.
	NoRowsAhead bool
}

// JobTargetsAnalyze refreshes the planner's statistics of job_targets. A job's targets are paged
// by (job_id, stream_seq) right after plan inserts them, before autovacuum has looked: without
// statistics PostgreSQL estimates one row per page and plans a bitmap scan and sort of every
// remaining target for each page, which makes paging quadratic in the job size (80 ms a page at
// 30,000 targets instead of 10 ms). A failure is not the caller's failure: a role that does not
// own the table gets a warning from PostgreSQL, not an error, and paging is then only slower.
func JobTargetsAnalyze(ctx context.Context, db Querier) error {
	_, err := db.Exec(ctx, "analyze job_targets")
	return err
}

// JobTargetsAnalyze is JobTargetsAnalyze on the store's pool.
func (s *Store) JobTargetsAnalyze(ctx context.Context) error { return JobTargetsAnalyze(ctx, s.pool) }

// JobTargetsPageToPublish returns up to p.Limit targets of p.JobID with a stream sequence above
// p.AfterSeq, in stream order, that are pending, shadowed or published and have no effects row of
// p.Consumer under p.Version: the targets a (resumed) run still has to publish. A target with a row
// under the version (completed, uncertain, processing, retrying) is never returned, unless
// p.NoRowsAhead vouches that there is none.
func (s *Store) JobTargetsPageToPublish(ctx context.Context, p PublishPage) ([]ExecTarget, error) {
	jobID, afterSeq := p.JobID, p.AfterSeq
	var rows pgx.Rows
	var err error
	if p.NoRowsAhead {
		rows, err = s.pool.Query(ctx, jobTargetsPageToPublishNoRows, p.JobID, int64(p.AfterSeq), p.Limit)
	} else {
		rows, err = s.pool.Query(ctx, jobTargetsPageToPublish, p.JobID, p.Consumer, p.Version, int64(p.AfterSeq), p.Limit)
	}
	if err != nil {
		return nil, fmt.Errorf("read the targets job %s still has to publish after stream sequence %d: %w", jobID, afterSeq, err)
	}
	targets, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ExecTarget, error) {
		var t ExecTarget
		var seq int64
		err := row.Scan(&t.EventID, &seq, &t.OriginalSubject, &t.PayloadHash)
		t.StreamSeq = uint64(seq)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the targets job %s still has to publish after stream sequence %d: %w", jobID, afterSeq, err)
	}
	return targets, nil
}

// One primary-key probe per event.
const effectsEventsUnderVersion = `
select event_id from effects where consumer = $1 and effect_version = $2 and event_id = any($3)`

// EffectsEventsUnderVersion returns those of eventIDs that have a row of consumer under version,
// in any state: their replay reached the consumer. One query for the whole slice, sent again
// after a lost connection.
func (s *Store) EffectsEventsUnderVersion(ctx context.Context, consumer string, version int, eventIDs []string) ([]string, error) {
	if len(eventIDs) == 0 {
		return nil, nil
	}
	var found []string
	_, err := retryLostConnection(ctx, func() error {
		rows, err := s.pool.Query(ctx, effectsEventsUnderVersion, consumer, version, eventIDs)
		if err != nil {
			return err
		}
		found, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("look up which of %d events of consumer %s have a ledger row under version %d: %w", len(eventIDs), consumer, version, err)
	}
	return found, nil
}

// Only pending and shadowed targets change, so a published target keeps its first published_at;
// the coalesce keeps it even for a target that went back to pending by hand.
const jobTargetsMarkPublished = `
update job_targets
   set status = 'published', published_at = coalesce(published_at, $3), updated_at = now()
 where job_id = $1 and event_id = any($2) and status in ('pending', 'shadowed')`

// JobTargetsMarkPublished sets the targets of jobID among eventIDs that are pending or shadowed to
// published, with published_at = at; published targets keep their first published_at. It returns
// how many rows changed. One statement for the whole slice.
func (s *Store) JobTargetsMarkPublished(ctx context.Context, jobID string, eventIDs []string, at time.Time) (int64, error) {
	if len(eventIDs) == 0 {
		return 0, nil
	}
	var changed int64
	// Idempotent: sent again after a lost connection.
	_, err := retryLostConnection(ctx, func() error {
		tag, err := s.pool.Exec(ctx, jobTargetsMarkPublished, jobID, eventIDs, at)
		changed += tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mark %d targets of job %s published: %w", len(eventIDs), jobID, err)
	}
	return changed, nil
}

// TargetOutcome is why one target was settled without a ledger outcome (skipped for drift,
// failed for a missing or changed DLQ message).
type TargetOutcome struct {
	EventID string
	Detail  string
}

const jobTargetsSetOutcome = `
update job_targets t
   set status = $2, outcome_detail = nullif(o.detail, ''), updated_at = now()
  from unnest($3::text[], $4::text[]) as o(event_id, detail)
 where t.job_id = $1 and t.event_id = o.event_id and t.status in ('pending', 'shadowed', 'published')`

// JobTargetsSetOutcome sets status (TargetSkipped or TargetFailed) and outcome_detail on the
// targets of jobID in outcomes that are still pending, shadowed or published, in one statement. It returns how many rows changed. Any other status is refused without a write; an
// empty Detail is stored as NULL.
func (s *Store) JobTargetsSetOutcome(ctx context.Context, jobID, status string, outcomes []TargetOutcome) (int64, error) {
	if status != TargetSkipped && status != TargetFailed {
		return 0, fmt.Errorf("set the outcome of %d targets of job %s: status %q is neither %s nor %s",
			len(outcomes), jobID, status, TargetSkipped, TargetFailed)
	}
	if len(outcomes) == 0 {
		return 0, nil
	}
	ids, details := make([]string, len(outcomes)), make([]string, len(outcomes))
	for i, o := range outcomes {
		ids[i], details[i] = o.EventID, o.Detail
	}
	var tag pgconn.CommandTag
	// Idempotent: sent again after a lost connection.
	_, err := retryLostConnection(ctx, func() (err error) {
		tag, err = s.pool.Exec(ctx, jobTargetsSetOutcome, jobID, status, ids, details)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mark %d targets of job %s %s: %w", len(outcomes), jobID, status, err)
	}
	return tag.RowsAffected(), nil
}

// JobEffectCounts are the effects rows a job's replay wrote: consumer's rows under the job's
// version whose job_id is the job.
type JobEffectCounts struct {
	// Completed rows have a result that is not a business failure; every reconciled row counts
	// here, as JobTargetsSettle makes its target completed.
	Completed int64
	// BusinessFailed rows completed with outcome_kind business: a terminal failure.
	BusinessFailed int64
	Uncertain      int64
	// Processing rows hold a lease (live or lapsed); Retrying rows are received again after a
	// transient failure, less DeadLettered: received rows whose replay the consumer dead-lettered
	// again, which failed their target (consumer.failReplayTarget).
	Processing   int64
	Retrying     int64
	DeadLettered int64
	// SettledCalls sums greatest(effect_count, calls_started) over completed, reconciled and
	// uncertain rows; InFlightCalls sums calls_started over processing rows.
	SettledCalls  int64
	InFlightCalls int64
}

// Settled is how many rows reached an outcome that needs no further processing.
func (c JobEffectCounts) Settled() int64 { return c.Completed + c.BusinessFailed + c.Uncertain }

// deadLetteredAgain holds for a received row of job $3 whose target failed: the consumer
// dead-lettered its replay again (consumer.failReplayTarget), so it is not waiting to retry.
const deadLetteredAgain = `exists (select 1 from job_targets t where t.job_id = $3 and t.event_id = e.event_id and t.status = 'failed')`

// One pass over the job's rows through effects_consumer_version_job_idx. An uncertain row's
// calls_started may exceed its effect_count (a call whose outcome is unknown), hence greatest().
const effectsJobCounts = `
select count(*) filter (where state = 'reconciled' or (state = 'completed' and outcome_kind is distinct from 'business')),
       count(*) filter (where state = 'completed' and outcome_kind = 'business'),
       count(*) filter (where state = 'uncertain'),
       count(*) filter (where state = 'processing'),
       count(*) filter (where state = 'received'),
       count(*) filter (where state = 'received' and ` + deadLetteredAgain + `),
       coalesce(sum(greatest(effect_count, calls_started)) filter (where state in ('completed', 'reconciled', 'uncertain')), 0),
       coalesce(sum(calls_started) filter (where state = 'processing'), 0)
  from effects e
 where consumer = $1 and effect_version = $2 and job_id = $3`

// EffectsJobCounts counts jobID's rows of consumer under version in one query, sent again after a
// lost connection.
func (s *Store) EffectsJobCounts(ctx context.Context, consumer string, version int, jobID string) (JobEffectCounts, error) {
	var c JobEffectCounts
	_, err := retryLostConnection(ctx, func() error {
		return s.pool.QueryRow(ctx, effectsJobCounts, consumer, version, jobID).Scan(&c.Completed, &c.BusinessFailed,
			&c.Uncertain, &c.Processing, &c.Retrying, &c.DeadLettered, &c.SettledCalls, &c.InFlightCalls)
	})
	if err != nil {
		return JobEffectCounts{}, fmt.Errorf("count the ledger rows of job %s (consumer %s, version %d): %w", jobID, consumer, version, err)
	}
	c.Retrying -= c.DeadLettered
	return c, nil
}

// Through the same index as effectsJobCounts.
const effectsJobRetryingSince = `
select count(*)
  from effects e
 where consumer = $1 and effect_version = $2 and job_id = $3 and state = 'received' and updated_at >= $4
   and not ` + deadLetteredAgain

// EffectsJobRetryingSince counts jobID's rows released after a transient failure at or after
// since (the release stamps updated_at): the targets failing now, not those still waiting out a
// backoff from before.
func (s *Store) EffectsJobRetryingSince(ctx context.Context, consumer string, version int, jobID string, since time.Time) (int64, error) {
	var n int64
	_, err := retryLostConnection(ctx, func() error {
		return s.pool.QueryRow(ctx, effectsJobRetryingSince, consumer, version, jobID, since).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("count the retrying rows of job %s (consumer %s, version %d): %w", jobID, consumer, version, err)
	}
	return n, nil
}

// Review item kinds for EffectsJobItems.
const (
	ReviewUncertain = "uncertain"
	ReviewFailed    = "failed"
)

// ReviewItem is an effects row a person has to look at. It holds no payload and no result body.
type ReviewItem struct {
	EventID      string          `json:"eventId"`
	State        string          `json:"state"`
	OutcomeKind  string          `json:"outcomeKind"`
	EffectCount  int             `json:"effectCount"`
	CallsStarted int             `json:"callsStarted"`
	ExternalRefs json.RawMessage `json:"externalRefs"`
	LeaseOwner   string          `json:"leaseOwner"`
	LastError    string          `json:"lastError"`
	UpdatedAt    time.Time       `json:"updatedAt"`
}

// $4 is the review kind; the list is short by nature, so the sort in byte order is cheap. A
// failed target is a business failure, or a replay the consumer dead-lettered again: its row is
// received and its target failed, with why (consumer.failReplayTarget).
const effectsJobItems = `
select e.event_id, e.state, coalesce(e.outcome_kind, ''), e.effect_count, e.calls_started, e.external_refs,
       coalesce(e.lease_owner, ''), coalesce(t.outcome_detail, e.last_error, ''), e.updated_at
  from effects e
  left join job_targets t on t.job_id = $3 and t.event_id = e.event_id
 where e.consumer = $1 and e.effect_version = $2 and e.job_id = $3
   and (($4 = 'uncertain' and e.state = 'uncertain')
        or ($4 = 'failed' and ((e.state = 'completed' and e.outcome_kind = 'business')
                               or (e.state = 'received' and t.status = 'failed'))))
 order by e.event_id collate "C"
 limit $5`

// EffectsJobItems lists up to limit of jobID's rows of consumer under version, by event ID (byte
// order): kind ReviewUncertain lists uncertain rows, ReviewFailed completed rows with outcome_kind
// business and received rows whose target failed (dead-lettered again). Another kind is refused. A read, so it is sent again after a lost connection.
func (s *Store) EffectsJobItems(ctx context.Context, consumer string, version int, jobID, kind string, limit int) ([]ReviewItem, error) {
	if kind != ReviewUncertain && kind != ReviewFailed {
		return nil, fmt.Errorf("list the rows of job %s to review: kind %q is neither %s nor %s", jobID, kind, ReviewUncertain, ReviewFailed)
	}
	var items []ReviewItem
	_, err := retryLostConnection(ctx, func() error {
		rows, err := s.pool.Query(ctx, effectsJobItems, consumer, version, jobID, kind, max(limit, 0))
		if err != nil {
			return err
		}
		items, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReviewItem, error) {
			var it ReviewItem
			var refs []byte
			err := row.Scan(&it.EventID, &it.State, &it.OutcomeKind, &it.EffectCount, &it.CallsStarted, &refs,
				&it.LeaseOwner, &it.LastError, &it.UpdatedAt)
			it.ExternalRefs = json.RawMessage(refs)
			return it, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list the %s rows of job %s to review: %w", kind, jobID, err)
	}
	return items, nil
}

// Only rows that reached an outcome settle a target; processing and received rows leave it as it
// is. outcome_detail is cleared for a target that completed or became uncertain.
const jobTargetsSettle = `
update job_targets t
   set status = case when e.state = 'uncertain' then 'uncertain'
                     when e.state = 'completed' and e.outcome_kind = 'business' then 'failed'
                     else 'completed' end,
       outcome_detail = case when e.state = 'completed' and e.outcome_kind = 'business' then e.last_error end,
       updated_at = now()
  from effects e
 where t.job_id = $1 and t.status in ('pending', 'shadowed', 'published')
   and e.consumer = $2 and e.event_id = t.event_id and e.effect_version = $3 and e.job_id = $1
   and e.state in ('completed', 'reconciled', 'uncertain')`

// JobTargetsSettle copies the ledger's outcome onto jobID's pending, shadowed and published
// targets that have a row of consumer under version for jobID, through q, in one statement:
// uncertain -> uncertain, completed with outcome_kind business -> failed (outcome_detail: the
// row's last_error), completed or reconciled -> completed. It returns how many rows changed.
// Targets already settled are left alone, so a reconciled row does not revisit an uncertain one.
func JobTargetsSettle(ctx context.Context, q Querier, jobID, consumer string, version int) (int64, error) {
	tag, err := q.Exec(ctx, jobTargetsSettle, jobID, consumer, version)
	if err != nil {
		return 0, fmt.Errorf("copy the ledger's outcomes onto the targets of job %s: %w", jobID, err)
	}
	return tag.RowsAffected(), nil
}

// NotPublished is a target execute could not publish, and why (outcome_detail): its DLQ message
// deleted or replaced since plan, or refused by NATS (over max_payload).
type NotPublished struct {
	EventID   string `json:"eventId"`
	StreamSeq int64  `json:"dlqStreamSeq"`
	Detail    string `json:"detail"`
}

// A failed target without a row of the consumer under the job's version never reached it.
const jobTargetsNotPublished = `
select t.event_id, t.stream_seq, coalesce(t.outcome_detail, '')
  from job_targets t
 where t.job_id = $1 and t.status = 'failed'
   and not exists (select 1 from effects e where e.consumer = $2 and e.event_id = t.event_id and e.effect_version = $3)
 order by t.stream_seq
 limit $4`

// JobTargetsNotPublished lists up to limit of jobID's targets that failed before they reached the
// consumer, in stream order, each with why.
func (s *Store) JobTargetsNotPublished(ctx context.Context, jobID, consumer string, version, limit int) ([]NotPublished, error) {
	rows, err := s.pool.Query(ctx, jobTargetsNotPublished, jobID, consumer, version, limit)
	if err != nil {
		return nil, fmt.Errorf("list the targets of job %s that were not published: %w", jobID, translate(err))
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[NotPublished])
	if err != nil {
		return nil, fmt.Errorf("list the targets of job %s that were not published: %w", jobID, translate(err))
	}
	if list == nil {
		list = []NotPublished{}
	}
	return list, nil
}

const jobTargetsPublishedWithRows = `
select count(*) from job_targets t
 where t.job_id = $1 and t.status = 'published'
   and exists (select from effects e where e.consumer = $2 and e.event_id = t.event_id and e.effect_version = $3)`

// JobTargetsPublishedWithRows counts jobID's targets an earlier run published whose message
// reached the consumer (a row under the job's version): a rerun does not publish them again, so
// they are what it finds in flight. The other published targets it publishes again.
func (s *Store) JobTargetsPublishedWithRows(ctx context.Context, jobID, consumer string, version int) (int64, error) {
	var n int64
	_, err := retryLostConnection(ctx, func() error {
		return s.pool.QueryRow(ctx, jobTargetsPublishedWithRows, jobID, consumer, version).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("count the targets job %s published before: %w", jobID, translate(err))
	}
	return n, nil
}
