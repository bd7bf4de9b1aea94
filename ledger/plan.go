package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replayctl/replayctl/jobtype"
)

// Target classes a plan assigns to each distinct event ID of the scan.
const (
	ClassTarget         = "target"
	ClassDone           = "done"
	ClassConflictSource = "conflict_source"
	ClassConflictLedger = "conflict_ledger"
	ClassUncertain      = "uncertain"
	ClassInFlight       = "in_flight"
	ClassOtherJob       = "other_job"
	ClassNotProcessed   = "not_processed"
	ClassOverMax        = "over_max"
	// ClassEvidenceExpired: the event's only rows are expired tombstones, or it has none while
	// its message is older than the evidence window.
	ClassEvidenceExpired = "evidence_expired"
	// ClassEvidenceReconciled: evidence_expired until the consumer's look-up said the effect
	// happened; recorded reconciled, kept out.
	ClassEvidenceReconciled = "evidence_reconciled"
)

// PlanScanColumns are the columns, in order, of each row a plan copies in with PlanSession.ScanCopy.
// payload_hash is the canonical-json-v1 fingerprint, which shadow and execute check the DLQ message
// against, NULL when it is fingerprints[1] (the consumer's current algorithm is canonical-json-v1:
// the usual case, and 71 bytes less per row for COPY to ingest); fingerprints holds the payload's fingerprint under each algorithm passed to Classify, in
// that order, the consumer's current algorithm first. stored_at is when the stream stored the
// message: an event without a ledger row whose message is older than the evidence window may have
// had its row pruned.
var PlanScanColumns = []string{"seq", "event_id", "payload_hash", "fingerprints", "failure_reason", "original_subject", "stored_at"}

// planSessionSettings apply to the plan transaction only. Bulk statements grow with the DLQ, so the
// pool's interactive statement timeout is too short for a million events; sorts of a million rows
// spill to disk under the default work_mem; and JIT compilation costs more than it saves on these
// one-off statements, whose row estimates (temporary tables) invite it.
var planSessionSettings = []string{
	"set local statement_timeout = '15min'",
	"set local work_mem = '256MB'",
	"set local jit = off",
}

const planScanCreate = `
create temp table plan_scan (
    seq              bigint not null,
    event_id         text   collate "C" not null,
    payload_hash     text,
    fingerprints     text[] not null,
    failure_reason   text   not null,
    original_subject text   not null,
    stored_at        timestamptz not null
) on commit drop`

// planRepeatedCreate collapses each event ID the scan repeats to its first message by stream
// sequence, with how many messages carried the ID, whether their payloads disagree, all their
// stream sequences (drain deletes every one) and their distinct payload hashes (a source
// conflict lists them). Payloads are compared under the consumer's current algorithm
// (fingerprints[1]), so copies that differ only in the fields it leaves out, or in the order of
// its set arrays, are one intent. A hash aggregate finds the repeated IDs, so only their rows go
// through the window sort; it groups only the IDs $1 the scan says may repeat, unless $2 (the
// scan could not say), when it groups them all, which cost 20 ms of a 20,000-message plan.
const planRepeatedCreate = `
create temp table plan_repeated on commit drop as
with copies as materialized (
    select * from plan_scan
     where event_id in (select event_id from plan_scan
                         where $2 or event_id = any($1::text[])
                         group by event_id having count(*) > 1)
)
select event_id, seq, coalesce(payload_hash, fingerprints[1]) as payload_hash, fingerprints, failure_reason, original_subject, stored_at, messages,
       case when min_hash <> max_hash then 2 else 1 end as hashes,
       seqs, source_hashes
  from (select *,
               row_number() over w         as rn,
               count(*) over w             as messages,
               min(fingerprints[1]) over w as min_hash,
               max(fingerprints[1]) over w as max_hash,
               array_agg(seq) over w       as seqs
          from copies
        window w as (partition by event_id order by seq rows between unbounded preceding and unbounded following)) s
  join (select event_id, array_agg(distinct fingerprints[1] order by fingerprints[1]) as source_hashes
          from copies
         group by event_id) h using (event_id)
 where rn = 1`

// planFirst is one row per event ID of the scan (alias it): a unique ID's message as it is, a
// repeated one's row of plan_repeated. It is a subquery, not a table: a DLQ's IDs are nearly
// all unique, and writing every scan row again cost more than the anti-join its three readers
// repeat (psql, 20,000 messages: 36-65 ms against 22-26 ms; sorting and windowing every row, as
// before, 105-254 ms).
const planFirst = `(
select event_id, seq, coalesce(payload_hash, fingerprints[1]) as payload_hash, fingerprints, failure_reason, original_subject, stored_at,
       1::bigint as messages, 1 as hashes, null::bigint[] as seqs, null::text[] as source_hashes
  from plan_scan s
 where not exists (select from plan_repeated r where r.event_id = s.event_id)
union all
select * from plan_repeated)`

// ledgerStatesAgg renders an event's effects rows (alias e) as "version:state:request_hash,..." by
// version: the plan digest, job_targets.planned_states and execute's drift check all use this one
// expression, so an unchanged target renders equal. A write-forbidden row made no external call,
// so it is left out: one appearing after plan is not drift.
const ledgerStatesAgg = `string_agg(e.effect_version::text || ':' || e.state || ':' || e.request_hash, ',' order by e.effect_version)
    filter (where e.write_forbidden is not true)`

// settledForReal is an effects row (alias e) whose effect happened: completed (a success or a
// terminal business failure) or reconciled by hand, and not by a write-forbidden replay.
const settledForReal = `(e.state in ('completed', 'reconciled') and not e.write_forbidden)`

// planIncomingHash is the DLQ payload's fingerprint (alias p) under the algorithm of ledger row
// e, from the algorithms $3; NULL when the row's algorithm is not among them.
const planIncomingHash = `p.fingerprints[array_position($3::text[], e.request_hash_alg)]`

// planRowMismatch: row e's hash differs from the payload recomputed under its algorithm. A row
// whose algorithm cannot be computed is a mismatch: its hash is never skipped. A row imported
// without a fingerprint (algorithm none, fingerprint.AlgorithmNone) matches every payload: the
// event ID alone decides, as the system it came from did.
const planRowMismatch = `(e.request_hash_alg <> 'none' and e.request_hash is distinct from ` + planIncomingHash + `)`

// planEventsClassify joins the consumer's ledger rows and the unfinished jobs' targets once and
// classifies every event ID for a replay to version $2 from a source of kind $5; the order of the
// case is the precedence documented in docs/manifest.md. The ledger is read by key, one
// primary-key probe per scanned event (the lateral subquery): a join let PostgreSQL hash the
// consumer's whole history, 20 s of a 20,000-message plan at 5 M rows against 0.5 s at an empty
// ledger (docs/benchmarks.md, issue 40). A DLQ plan keeps out every event settled under any
// version (done, with the version and job that settled it); a backfill targets exactly those
// settled under an older version and keeps out the events never processed.
var planEventsClassify = `
create temp table plan_events on commit drop as
with ledger_rows as (
    select p.event_id, l.*
      from ` + planFirst + ` p
      cross join lateral (
        select count(*) as ledger_rows,
           bool_or(e.effect_version = $2 and ` + settledForReal + `) as done_target,
           bool_or(e.effect_version < $2 and ` + settledForReal + `) as done_older,
           bool_or(e.state = 'uncertain'
                   or (e.state = 'processing' and (e.lease_expires_at is null or e.lease_expires_at <= now())))
                                                                                    as uncertain,
           bool_or(e.state = 'processing' and e.lease_expires_at > now())            as in_flight,
           bool_or(e.state = 'expired')                                              as expired,
           bool_or(e.state in ('completed', 'reconciled'))                          as done_any,
           bool_or(` + planRowMismatch + `)                                         as mismatch,
           (array_agg(e.request_hash order by e.effect_version desc)
                filter (where ` + planRowMismatch + `))[1]                          as ledger_hash,
           (array_agg(coalesce(` + planIncomingHash + `, 'not computable: ' || e.request_hash_alg)
                      order by e.effect_version desc)
                filter (where ` + planRowMismatch + `))[1]                          as incoming_hash,
           (array_agg(e.effect_count order by e.effect_version desc) filter (where ` + settledForReal + `))[1]
                                                                                    as known_effect_count,
           (array_agg(e.effect_version order by e.effect_version desc) filter (where ` + settledForReal + `))[1]
                                                                                    as done_version,
           (array_agg(coalesce(e.job_id, '') order by e.effect_version desc) filter (where ` + settledForReal + `))[1]
                                                                                    as done_by,
           (array_agg(case when e.outcome_kind = 'business' then 'business failure' else e.state end
                      order by e.effect_version desc) filter (where ` + settledForReal + `))[1]
                                                                                    as done_outcome,
           ` + ledgerStatesAgg + ` as ledger_states
          -- The scan's event_id is collated "C"; compared under the column's own collation the
          -- primary key serves the probe (equality is the same under any deterministic one).
          from ` + planLedgerRows("$1::text", "p.event_id") + ` e) l
     where l.ledger_rows > 0
),
other_jobs as (
    select distinct on (t.event_id) t.event_id, j.id as job_id, j.status
      from jobs j
      join job_targets t on t.job_id = j.id
      join ` + planFirst + ` p on p.event_id = t.event_id
     where j.consumer = $1 and j.status = any($6)
     order by t.event_id, j.created_at, j.id
)
select p.event_id, p.seq, p.seqs, p.payload_hash, p.original_subject, p.messages, p.hashes, p.source_hashes,
       case when $5 = 'backfill' then coalesce('v' || l.done_version || ' ' || l.done_outcome, '')
            else p.failure_reason end                           as failure_reason,
       coalesce(l.done_older, false)                            as done_older,
       l.ledger_hash, l.incoming_hash, l.known_effect_count, l.done_version, l.done_by,
       o.job_id as other_job, o.status as other_job_status,
       coalesce(l.ledger_states, '')                            as ledger_states,
       case when p.hashes > 1                                   then 'conflict_source'
            when coalesce(l.done_target, false)                 then 'done'
            when coalesce(l.mismatch, false)                    then 'conflict_ledger'
            when $5 = 'dlq' and coalesce(l.done_older, false)   then 'done'
            when coalesce(l.uncertain, false)                   then 'uncertain'
            when coalesce(l.in_flight, false)                   then 'in_flight'
            when (coalesce(l.expired, false) and not coalesce(l.done_any, false))
                 or (l.event_id is null and p.stored_at < now() - $4::bigint * interval '1 millisecond')
                                                                then 'evidence_expired'
            when o.job_id is not null                           then 'other_job'
            when $5 = 'backfill' and not coalesce(l.done_older, false) then 'not_processed'
            else 'target' end as class
  from ` + planFirst + ` p
  left join ledger_rows l using (event_id)
  left join other_jobs o using (event_id)`

// planEventsApplyMax keeps the oldest $1 targets by stream sequence; the rest become over_max.
const planEventsApplyMax = `
update plan_events set class = 'over_max'
 where class = 'target'
   and event_id in (select event_id from plan_events where class = 'target' order by seq offset $1)`

const planEventsSummary = `
select count(*)                                                                   as candidates,
       coalesce(sum(messages - 1) filter (where hashes = 1), 0)                   as repeated_in_source,
       count(*) filter (where class = 'conflict_source')                          as duplicate_in_source,
       count(*) filter (where class = 'conflict_ledger')                          as ledger_payload_mismatch,
       count(*) filter (where class = 'done')                                     as already_completed,
       count(*) filter (where class = 'target' and done_older)                    as completed_under_older_version,
       count(*) filter (where class = 'uncertain')                                as excluded_uncertain,
       count(*) filter (where class = 'in_flight')                                as excluded_in_flight,
       count(*) filter (where class = 'other_job')                                as excluded_in_other_job,
       count(*) filter (where class = 'not_processed')                            as not_processed,
       count(*) filter (where class = 'over_max')                                 as over_max,
       count(*) filter (where class = 'evidence_expired')                         as evidence_expired,
       count(*) filter (where class = 'evidence_reconciled')                      as evidence_reconciled,
       count(*) filter (where class = 'target')                                   as targets,
       count(*) filter (where class = 'target' and known_effect_count is not null) as known_targets,
       coalesce(sum(known_effect_count) filter (where class = 'target'), 0)         as known_calls
  from plan_events`

// planEventsHistograms counts the targets by failure_reason (the DLQ's failure reason, or for a
// backfill the previous version's outcome, "v1 completed") and the events kept out as done by who
// settled them (a job, or the empty string for a live completion), in one pass over every class:
// the temporary table has no statistics, so a `where class = 'target'` was estimated at 0.5 % of
// its rows and the planner sorted all the targets to group them (12 ms of 20,000; a hash
// aggregate of every row takes 6).
const planEventsHistograms = `
select class, coalesce(case class when 'target' then failure_reason when 'done' then done_by end, ''), count(*)
  from plan_events
 group by 1, 2`

// planEventsKeptOut lists the first $1 event IDs of each class a plan keeps out without a ledger
// row to show (done, in another job, never processed), with the version and job that settled a
// done one, or the other job and its status.
const planEventsKeptOut = `
select class, event_id, coalesce(done_version, 0), coalesce(done_by, ''),
       coalesce(other_job, ''), coalesce(other_job_status, '')
  from (select *, row_number() over (partition by class order by event_id collate "C") as rn
          from plan_events
         where class in ('done', 'other_job', 'not_processed')) p
 where rn <= $1
 order by class, event_id collate "C"`

// planEventsConflicts lists conflicts with their payload hashes: every distinct hash the scan saw
// (under the current algorithm) for a source conflict, collected with the collapse: a look-up in
// the scan per conflict read the whole scan each time; for a ledger conflict, the DLQ payload's
// hash under the conflicting row's algorithm and the row's.
const planEventsConflicts = `
select p.event_id, p.class,
       case when p.class = 'conflict_source' then p.source_hashes
            else array[p.incoming_hash, p.ledger_hash] end
  from plan_events p
 where p.class in ('conflict_source', 'conflict_ledger')
 order by p.event_id collate "C"`

// planEventsLedgerExclusions lists the ledger rows that made an event uncertain or in flight.
const planEventsLedgerExclusions = `
select p.event_id, p.class, e.effect_version, e.state, coalesce(e.lease_owner, ''), e.lease_expires_at
  from plan_events p
  join effects e on e.consumer = $1 and e.event_id = p.event_id
 where (p.class = 'uncertain'
        and (e.state = 'uncertain'
             or (e.state = 'processing' and (e.lease_expires_at is null or e.lease_expires_at <= now()))))
    or (p.class = 'in_flight' and e.state = 'processing' and e.lease_expires_at > now())
 order by p.event_id collate "C", e.effect_version`

const planEventsTargets = `
select event_id, ledger_states from plan_events where class = 'target' order by event_id collate "C"`

// effectsCompletedEffectCount is the mean effect_count of at most effectCountSample of the
// consumer's settled effects, read down the primary key (the highest event IDs first): a bounded
// sample whose cost does not grow with the history (averaging every completed row took 1.2 s at
// 5 M rows, issue 40; 20,000 rows take 7-15 ms warm there), the same rows on every plan of the
// same ledger, and the whole history below 20,000 settled rows, the demo's included.
const effectsCompletedEffectCount = `
select count(*), coalesce(avg(s.effect_count), 0)::float8
  from (select e.effect_count
          from effects e
         where e.consumer = $1 and ` + settledForReal + `
         order by e.consumer desc, e.event_id desc, e.effect_version desc
         limit $2) s`

// effectCountSample bounds the expected-calls estimate's sample.
const effectCountSample = 20_000

// planned_states keeps each target's ledger rows at plan time (NULL: none), for execute's drift
// check. The inserted rows come back for the manifest and the state digest, which read them in
// the order they are inserted: a second sorted read of the targets cost 10-17 ms of a
// 20,000-message plan. PostgreSQL returns an INSERT's rows as it inserts them, but SQL does not
// promise that order, so RecordTargets checks it and reads the targets again if it ever differs.
const jobTargetsInsertFromPlan = `
insert into job_targets (job_id, event_id, stream_seq, source_seqs, original_subject, failure_reason, payload_hash, planned_states)
select $1, event_id, seq, seqs, original_subject, failure_reason, payload_hash, nullif(ledger_states, '')
  from plan_events where class = 'target'
 order by event_id
returning event_id, coalesce(planned_states, '')`

// PlanSession is one plan's transaction on a dedicated connection: the scan is copied into temporary
// tables that exist only inside it, and the job is recorded in the same transaction, so a failed or
// interrupted plan leaves nothing behind.
type PlanSession struct {
	conn *pgxpool.Conn
	tx   pgx.Tx
	// recorded is how many targets RecordTargets inserted, which Record checks against the job.
	recorded int64
}

// PlanSummary holds the counts of a classified plan. Each field is read from the summary's
// column of its db name, so reordering the query's columns cannot move a count into another
// field, and a column or field without its pair fails every plan instead of reading zero.
type PlanSummary struct {
	Candidates                 int64 `db:"candidates"`
	RepeatedInSource           int64 `db:"repeated_in_source"`
	DuplicateInSource          int64 `db:"duplicate_in_source"`
	LedgerPayloadMismatch      int64 `db:"ledger_payload_mismatch"`
	AlreadyCompleted           int64 `db:"already_completed"`
	CompletedUnderOlderVersion int64 `db:"completed_under_older_version"`
	ExcludedUncertain          int64 `db:"excluded_uncertain"`
	ExcludedInFlight           int64 `db:"excluded_in_flight"`
	ExcludedInOtherJob         int64 `db:"excluded_in_other_job"`
	NotProcessed               int64 `db:"not_processed"`
	OverMax                    int64 `db:"over_max"`
	EvidenceExpired            int64 `db:"evidence_expired"`
	EvidenceReconciled         int64 `db:"evidence_reconciled"`
	Targets                    int64 `db:"targets"`
	KnownTargets               int64 `db:"known_targets"`
	KnownCalls                 int64 `db:"known_calls"`
}

// ScanRepeats tells Classify which event IDs of the scan may occur in more than one message.
// The zero value says nothing, and Classify looks for repeats among every ID.
type ScanRepeats struct {
	// Known says IDs holds every ID the scan repeats, and maybe some it does not.
	Known bool
	IDs   []string
}

// PlanConflict is an event ID whose payloads disagree within the scan or with the ledger.
type PlanConflict struct {
	EventID string
	// Where is "source" or "ledger".
	Where         string
	PayloadHashes []string
}

// PlanExclusion is a ledger row that kept an event ID out of the targets.
type PlanExclusion struct {
	EventID        string
	Class          string
	EffectVersion  int
	State          string
	LeaseOwner     string
	LeaseExpiresAt *time.Time
}

// PlanBegin opens a plan session and creates its scan table.
func (s *Store) PlanBegin(ctx context.Context) (*PlanSession, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan: acquire a ledger connection: %w", err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		conn.Release()
		return nil, fmt.Errorf("plan: begin transaction: %w", err)
	}
	p := &PlanSession{conn: conn, tx: tx}
	for _, q := range slices.Concat(planSessionSettings, []string{planScanCreate}) {
		if _, err := tx.Exec(ctx, q); err != nil {
			p.Rollback(ctx)
			return nil, fmt.Errorf("plan: prepare scan table: %w", err)
		}
	}
	return p, nil
}

// ScanCopy streams the scanned messages into the session with one COPY, so memory stays bounded by
// the copy buffer however large the DLQ.
func (p *PlanSession) ScanCopy(ctx context.Context, rows pgx.CopyFromSource) (int64, error) {
	n, err := p.tx.CopyFrom(ctx, pgx.Identifier{"plan_scan"}, PlanScanColumns, rows)
	if err != nil {
		return n, fmt.Errorf("plan: copy scanned messages into the ledger session: %w", err)
	}
	return n, nil
}

// ScanDrop removes ids from the scanned messages before Classify: events plan keeps out for what
// their messages say (failed again after replays), not for their ledger rows.
func (p *PlanSession) ScanDrop(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := p.tx.Exec(ctx, `delete from plan_scan where event_id = any($1)`, ids); err != nil {
		return fmt.Errorf("plan: keep %d events out of the scan: %w", len(ids), err)
	}
	return nil
}

const planConsumerLock = `select pg_advisory_xact_lock(hashtextextended(current_schema() || ':replayctl.plan.consumer:' || $1, 0))`

// Classify joins the scan against the consumer's ledger rows and unfinished jobs and classifies
// each event ID for a replay to targetVersion from a source of sourceKind (jobtype.SourceDLQ or
// jobtype.SourceBackfill); maxTargets > 0 keeps only the oldest maxTargets targets. hashAlgorithms name
// the scan rows' fingerprints, in order: a ledger row is compared with the fingerprint under its
// own algorithm, and a row under any other algorithm is a conflict.
//
// evidenceWindow is the consumer's evidence retention: an event whose only rows are expired
// tombstones, or that has no row while its message is older than the window, is classed
// evidence_expired and kept out of the targets (docs/ledger.md, "Expired evidence").
func (p *PlanSession) Classify(ctx context.Context, consumer, sourceKind string, targetVersion int, hashAlgorithms []string,
	evidenceWindow time.Duration, maxTargets int, repeats ScanRepeats) error {
	// Two plans of one consumer classify one at a time, each until it commits or rolls back: the
	// second then sees the first's targets as another unfinished job's. Without it both recorded
	// a job for the same events, and the loser stayed shadowed for ever (execute refuses it).
	if _, err := p.tx.Exec(ctx, planConsumerLock, consumer); err != nil {
		return fmt.Errorf("plan: wait for another plan of consumer %q: %w", consumer, err)
	}
	if _, err := p.tx.Exec(ctx, planRepeatedCreate, repeats.IDs, !repeats.Known); err != nil {
		return fmt.Errorf("plan: collapse the scan to one row per event ID: %w", err)
	}
	// The scan is not analyzed: without statistics PostgreSQL takes a temporary table's row count
	// from its size, and the classification's plan (hash joins against effects and job_targets) was
	// the same with and without `analyze plan_first (event_id)`, which cost 36-39 ms of a
	// 20,000-message plan (docs/benchmarks.md, issue 17).
	if _, err := p.tx.Exec(ctx, planEventsClassify, consumer, targetVersion, hashAlgorithms, evidenceWindow.Milliseconds(), sourceKind, jobtype.Unfinished); err != nil {
		return fmt.Errorf("plan: join scan with the ledger of consumer %q: %w", consumer, err)
	}
	if maxTargets > 0 {
		if _, err := p.tx.Exec(ctx, planEventsApplyMax, maxTargets); err != nil {
			return fmt.Errorf("plan: apply --max %d: %w", maxTargets, err)
		}
	}
	return nil
}

// Summary returns the counts of the classified plan.
func (p *PlanSession) Summary(ctx context.Context) (PlanSummary, error) {
	rows, err := p.tx.Query(ctx, planEventsSummary)
	if err != nil {
		return PlanSummary{}, fmt.Errorf("plan: summarise: %w", err)
	}
	s, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[PlanSummary])
	if err != nil {
		return s, fmt.Errorf("plan: summarise: %w", err)
	}
	return s, nil
}

// Histograms returns the targets counted by failure reason and the events kept out as already
// done counted by the job that settled them, a live completion under "".
func (p *PlanSession) Histograms(ctx context.Context) (reasons, completedBy map[string]int64, err error) {
	rows, err := p.tx.Query(ctx, planEventsHistograms)
	if err != nil {
		return nil, nil, fmt.Errorf("plan: failure reasons and completions: %w", err)
	}
	reasons, completedBy = map[string]int64{}, map[string]int64{}
	var class, key string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&class, &key, &n}, func() error {
		switch class {
		case ClassTarget:
			reasons[key] = n
		case ClassDone:
			completedBy[key] = n
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("plan: failure reasons and completions: %w", err)
	}
	return reasons, completedBy, nil
}

// PlanKeptOut is an event ID a plan kept out for what the ledger or another job holds, not for
// one of its own rows' states.
type PlanKeptOut struct {
	// Class is ClassDone, ClassOtherJob or ClassNotProcessed.
	Class   string
	EventID string
	// DoneVersion and DoneBy are the version and job ("" for live) of a done event's settled row.
	DoneVersion int
	DoneBy      string
	// OtherJob and OtherJobStatus name the unfinished job that targets the event.
	OtherJob       string
	OtherJobStatus string
}

// KeptOut lists, for each of the classes done, other_job and not_processed, the first limit
// event IDs in byte order.
func (p *PlanSession) KeptOut(ctx context.Context, limit int) ([]PlanKeptOut, error) {
	rows, err := p.tx.Query(ctx, planEventsKeptOut, limit)
	if err != nil {
		return nil, fmt.Errorf("plan: list kept-out events: %w", err)
	}
	var out []PlanKeptOut
	var k PlanKeptOut
	_, err = pgx.ForEachRow(rows, []any{&k.Class, &k.EventID, &k.DoneVersion, &k.DoneBy, &k.OtherJob, &k.OtherJobStatus}, func() error {
		out = append(out, k)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("plan: list kept-out events: %w", err)
	}
	return out, nil
}

// Conflicts lists the event IDs excluded because their payloads disagree.
func (p *PlanSession) Conflicts(ctx context.Context) ([]PlanConflict, error) {
	rows, err := p.tx.Query(ctx, planEventsConflicts)
	if err != nil {
		return nil, fmt.Errorf("plan: list conflicts: %w", err)
	}
	var out []PlanConflict
	var eventID, class string
	var hashes []string
	_, err = pgx.ForEachRow(rows, []any{&eventID, &class, &hashes}, func() error {
		c := PlanConflict{EventID: eventID, Where: "source", PayloadHashes: hashes}
		if class == ClassConflictLedger {
			c.Where = "ledger"
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("plan: list conflicts: %w", err)
	}
	return out, nil
}

// LedgerExclusions lists the ledger rows that made event IDs uncertain or in flight.
func (p *PlanSession) LedgerExclusions(ctx context.Context, consumer string) ([]PlanExclusion, error) {
	rows, err := p.tx.Query(ctx, planEventsLedgerExclusions, consumer)
	if err != nil {
		return nil, fmt.Errorf("plan: list excluded ledger rows: %w", err)
	}
	var out []PlanExclusion
	var x PlanExclusion
	_, err = pgx.ForEachRow(rows, []any{&x.EventID, &x.Class, &x.EffectVersion, &x.State, &x.LeaseOwner, &x.LeaseExpiresAt}, func() error {
		out = append(out, x)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("plan: list excluded ledger rows: %w", err)
	}
	return out, nil
}

// RecordTargets inserts the classified targets into job_targets under jobID and returns their
// event IDs in byte order (the manifest's order) with the digest of their ledger rows
// (StateDigester). Record, which stores the job itself, must follow in the same session.
func (p *PlanSession) RecordTargets(ctx context.Context, jobID string) (ids []string, stateDigest string, err error) {
	rows, err := p.tx.Query(ctx, jobTargetsInsertFromPlan, jobID)
	if err != nil {
		return nil, "", fmt.Errorf("plan: record targets of job %s: %w", jobID, translate(err))
	}
	d := NewStateDigester()
	inOrder := true
	var eventID, states string
	_, err = pgx.ForEachRow(rows, []any{&eventID, &states}, func() error {
		if n := len(ids); n > 0 && eventID <= ids[n-1] {
			inOrder = false
		}
		ids = append(ids, eventID)
		if inOrder {
			d.Add(eventID, states)
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("plan: record targets of job %s: %w", jobID, translate(err))
	}
	p.recorded = int64(len(ids))
	if !inOrder {
		return p.targets(ctx)
	}
	return ids, d.Sum(), nil
}

// targets reads the targets' event IDs in byte order and digests their ledger rows.
func (p *PlanSession) targets(ctx context.Context) ([]string, string, error) {
	rows, err := p.tx.Query(ctx, planEventsTargets)
	if err != nil {
		return nil, "", fmt.Errorf("plan: list targets: %w", err)
	}
	var ids []string
	d := NewStateDigester()
	var eventID, states string
	if _, err := pgx.ForEachRow(rows, []any{&eventID, &states}, func() error {
		ids = append(ids, eventID)
		d.Add(eventID, states)
		return nil
	}); err != nil {
		return nil, "", fmt.Errorf("plan: list targets: %w", err)
	}
	return ids, d.Sum(), nil
}

// EffectCountMean returns the mean effect_count of a bounded sample of the consumer's completed
// effects and how many it read (at most effectCountSample).
func (p *PlanSession) EffectCountMean(ctx context.Context, consumer string) (int64, float64, error) {
	var n int64
	var mean float64
	if err := p.tx.QueryRow(ctx, effectsCompletedEffectCount, consumer, effectCountSample).Scan(&n, &mean); err != nil {
		return 0, 0, fmt.Errorf("plan: mean effect count of consumer %q: %w", consumer, err)
	}
	return n, mean, nil
}

// Record stores the job and the audit entry inside the session's transaction, after
// RecordTargets stored its targets: job_targets has no foreign key to jobs, and the job row
// carries the digests computed from the targets.
func (p *PlanSession) Record(ctx context.Context, job Job, entry AuditEntry) error {
	if p.recorded != job.Targets {
		return fmt.Errorf("plan: recorded %d targets for job %s, manifest has %d", p.recorded, job.ID, job.Targets)
	}
	if err := JobsInsert(ctx, p.tx, job); err != nil {
		return fmt.Errorf("plan: %w", err) // JobsInsert names the job
	}
	if err := AuditInsert(ctx, p.tx, entry); err != nil {
		return fmt.Errorf("plan: audit job %s: %w", job.ID, err)
	}
	return nil
}

// Commit commits the session and releases its connection.
func (p *PlanSession) Commit(ctx context.Context) error {
	defer p.conn.Release()
	if err := p.tx.Commit(ctx); err != nil {
		return fmt.Errorf("plan: commit: %w", translate(err))
	}
	// The new targets' statistics are refreshed by shadow and execute, which page them, when they
	// start: plan's analyze of job_targets (30 ms at 18,000 targets) is off its own path.
	return nil
}

// Rollback abandons the session; it is a no-op after Commit.
func (p *PlanSession) Rollback(ctx context.Context) {
	if p.tx.Rollback(ctx) != pgx.ErrTxClosed {
		p.conn.Release()
	}
}

// StateDigester fingerprints the targets' ledger rows, fed in manifest order, so that a later step can
// tell whether the ledger moved under the plan.
type StateDigester struct{ h hash.Hash }

// NewStateDigester returns an empty digester.
func NewStateDigester() *StateDigester { return &StateDigester{h: sha256.New()} }

// Add records one target and its ledger rows as returned by PlanSession.Targets.
func (d *StateDigester) Add(eventID, ledgerStates string) {
	d.h.Write([]byte(eventID))
	d.h.Write([]byte{0})
	d.h.Write([]byte(ledgerStates))
	d.h.Write([]byte{'\n'})
}

// Sum returns "sha256:<hex>".
func (d *StateDigester) Sum() string { return "sha256:" + hex.EncodeToString(d.h.Sum(nil)) }
