package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The queries `replayctl reconcile` runs: keyset pages of a consumer's uncertain rows, and the
// look-up verdicts applied in batches, each batch one statement that changes the rows (compare-
// and-set), their job targets and writes one audit entry per row.

// Look-up verdicts, as the consumer protocol names them (protocol.Verdict*) and review_verdict
// stores them.
const (
	VerdictHappened    = "happened"
	VerdictNotHappened = "not_happened"
	VerdictUnknown     = "unknown"
)

// EffectReconciled is the state of an effects row whose uncertain outcome a look-up proved done.
const EffectReconciled = "reconciled"

// ReviewManual is review_state of an uncertain row a person has to settle.
const ReviewManual = "manual_review"

// Audit actions of reconcile: one entry per row changed, one per run.
const (
	AuditReconciled   = "reconcile.reconciled"
	AuditManualReview = "reconcile.manual_review"
	AuditReconcileRun = "reconcile.run"
	// AuditResolved is a person's resolution of an uncertain row (reconcile resolve).
	AuditResolved = "reconcile.resolved"
)

// EffectReceived is the state of a row free to be claimed: a transient failure released it, or a
// person resolved it not happened, which makes its event a target of the next plan.
const EffectReceived = "received"

// StuckLeaseAfter is how long ago a processing row's lease must have lapsed, with nobody taking it
// over, for it to count as stuck: ledger stats warns of it, and reconcile lists one with a call
// started beside the uncertain rows. A redelivery normally reaches a lapsed lease within seconds
// (the SDK's nak delay and JetStream's AckWait); 15 minutes without one means no message is left.
const StuckLeaseAfter = 15 * time.Minute

// UncertainRow is an uncertain effects row as reconcile lists it. It holds no payload and no
// result body. UpdatedAt and ReviewedAt are the row's version for the compare-and-set at apply.
type UncertainRow struct {
	EventID       string
	EffectVersion int
	// State is the row's state: uncertain, or processing for a stuck lease; any state when read
	// by EffectsOfEventForReview.
	State          string
	JobID          string
	RequestHash    string
	RequestHashAlg string
	EffectCount    int
	CallsStarted   int
	ExternalRefs   json.RawMessage
	LeaseOwner     string
	LastError      string
	UpdatedAt      time.Time
	// Age is now() - updated_at by the database clock: how long the row has been uncertain.
	Age time.Duration
	// ReviewState, ReviewVerdict, ReviewNote, ReviewedAt and ReviewedBy are an earlier reconcile's
	// marks; empty and nil when none asked yet.
	ReviewState   string
	ReviewVerdict string
	ReviewNote    string
	ReviewedAt    *time.Time
	ReviewedBy    string
	// Stuck says the row is not uncertain but processing, its lease lapsed more than
	// StuckLeaseAfter ago after a call started, with no message left to bring an SDK back to it:
	// uncertain in all but name. A verdict applied to it settles it as one.
	Stuck bool
}

// UncertainFilter selects the uncertain rows of one consumer.
type UncertainFilter struct {
	Consumer string
	// JobID keeps only the rows of one replay job; empty keeps every row.
	JobID string
	// OlderThan keeps only rows uncertain for at least this long (by updated_at); 0 keeps all.
	OlderThan time.Duration
	// Stuck lists the stuck leases with a call started (UncertainRow.Stuck) instead of the
	// uncertain rows.
	Stuck bool
	// Due keeps only rows due for a look-up: never asked, or asked at least as long ago as they
	// had been uncertain when asked (so a row the look-up cannot settle is asked at doubling
	// ages), and at least OlderThan ago, at most MaxLookupBackoff ago. The consumer's reconcile
	// worker lists with it; a person running reconcile asks about every row.
	Due bool
}

// MaxLookupBackoff is the longest a due row (UncertainFilter.Due) waits between look-ups.
const MaxLookupBackoff = 24 * time.Hour

// UncertainCursor is the last row of a page: the next page starts after it.
type UncertainCursor struct {
	EventID       string
	EffectVersion int
}

// uncertainRowFrom reads the columns of an UncertainRow; the pages add which rows and in what order.
const uncertainRowFrom = `
select event_id, effect_version, state, coalesce(job_id, ''), request_hash, request_hash_alg, effect_count, calls_started,
       external_refs, coalesce(lease_owner, ''), coalesce(last_error, ''), updated_at,
       greatest(extract(epoch from now() - updated_at) * 1000, 0)::bigint,
       coalesce(review_state, ''), coalesce(review_verdict, ''), coalesce(review_note, ''), reviewed_at,
       coalesce(reviewed_by, '')
  from effects`

// uncertainPageOf filters and orders a page: one job's or all ($2), older than $3, due for a
// look-up when $7 (UncertainFilter.Due, with $8 = MaxLookupBackoff), after the cursor ($4, $5), at
// most $6 rows.
const uncertainPageOf = `
   and ($2 = '' or job_id = $2)
   and updated_at <= now() - $3::bigint * interval '1 millisecond'
   and (not $7::boolean or reviewed_at is null
        or now() - reviewed_at >= least(greatest(reviewed_at - updated_at, $3::bigint * interval '1 millisecond'),
                                        $8::bigint * interval '1 millisecond'))
   and (event_id collate "C", effect_version) > ($4::text collate "C", $5::integer)
 order by event_id collate "C", effect_version
 limit $6`

// The row comparison and order match effects_uncertain_idx, so a page is one range scan of the
// partial index. (”, -1) sorts before every row: event IDs are never empty.
const effectsUncertainPage = uncertainRowFrom + `
 where consumer = $1 and state = 'uncertain'` + uncertainPageOf

// Stuck leases are few and read through effects_attention_idx (consumer, state), then sorted.
// OlderThan applies to updated_at, the row's last heartbeat or call.
const effectsStuckPage = uncertainRowFrom + `
 where consumer = $1 and state = 'processing' and calls_started > 0
   and lease_expires_at < now() - $9::bigint * interval '1 millisecond'` + uncertainPageOf

// EffectsUncertainPage returns up to limit uncertain rows of f.Consumer after cursor (nil: from
// the start), in (event ID byte order, effect version) order, filtered by f.
func (s *Store) EffectsUncertainPage(ctx context.Context, f UncertainFilter, after *UncertainCursor, limit int) ([]UncertainRow, error) {
	cur := UncertainCursor{EffectVersion: -1}
	if after != nil {
		cur = *after
	}
	query, args, what := effectsUncertainPage, []any{f.Consumer, f.JobID, f.OlderThan.Milliseconds(),
		cur.EventID, cur.EffectVersion, max(limit, 0), f.Due, MaxLookupBackoff.Milliseconds()}, "uncertain ledger rows"
	if f.Stuck {
		query, args, what = effectsStuckPage, append(args, StuckLeaseAfter.Milliseconds()), "stuck leases"
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list the %s of consumer %s: %w", what, f.Consumer, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (UncertainRow, error) {
		r, err := scanUncertainRow(row)
		r.Stuck = f.Stuck
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("list the %s of consumer %s: %w", what, f.Consumer, err)
	}
	return out, nil
}

func scanUncertainRow(row pgx.CollectableRow) (UncertainRow, error) {
	var r UncertainRow
	var refs []byte
	var ageMS int64
	err := row.Scan(&r.EventID, &r.EffectVersion, &r.State, &r.JobID, &r.RequestHash, &r.RequestHashAlg, &r.EffectCount,
		&r.CallsStarted, &refs, &r.LeaseOwner, &r.LastError, &r.UpdatedAt, &ageMS, &r.ReviewState,
		&r.ReviewVerdict, &r.ReviewNote, &r.ReviewedAt, &r.ReviewedBy)
	r.ExternalRefs = json.RawMessage(refs)
	r.Age = time.Duration(ageMS) * time.Millisecond
	return r, err
}

const effectsOfEventForReview = uncertainRowFrom + `
 where consumer = $1 and event_id = $2
 order by effect_version`

// EffectsOfEventForReview returns every row of consumer's event, any state, by version, with the
// columns reconcile reads (Age counts from updated_at whatever the state): what a person resolving
// it is shown, and the version for the compare-and-set.
func (s *Store) EffectsOfEventForReview(ctx context.Context, consumer, eventID string) ([]UncertainRow, error) {
	rows, err := s.pool.Query(ctx, effectsOfEventForReview, consumer, eventID)
	if err != nil {
		return nil, fmt.Errorf("read the ledger rows of consumer %s event %q: %w", consumer, eventID, err)
	}
	out, err := pgx.CollectRows(rows, scanUncertainRow)
	if err != nil {
		return nil, fmt.Errorf("read the ledger rows of consumer %s event %q: %w", consumer, eventID, err)
	}
	return out, nil
}

// ReconcileVerdict is one look-up verdict to apply to the uncertain row it was asked for.
type ReconcileVerdict struct {
	EventID       string
	EffectVersion int
	// Verdict is VerdictHappened (the row becomes reconciled), VerdictNotHappened or
	// VerdictUnknown (the row stays uncertain, marked ReviewManual).
	Verdict string
	// FoundRefs is a JSON array of the references the look-up found; when the verdict is happened
	// those the row does not hold yet are appended to external_refs, which keeps every recorded
	// call. Ignored otherwise.
	FoundRefs json.RawMessage
	// Note is the look-up's detail, stored as review_note.
	Note string
	// SeenUpdatedAt and SeenReviewedAt are the row's updated_at and reviewed_at when it was
	// listed: a row that changed since is left alone.
	SeenUpdatedAt  time.Time
	SeenReviewedAt *time.Time
	// Stuck says the row was listed as a stuck lease (UncertainRow.Stuck): it is settled only if it
	// still is one, and becomes uncertain (manual review) or reconciled like any other.
	Stuck bool
	// Resolved says a person decided, after checking the provider (reconcile resolve): happened
	// reconciles the row as a look-up's would; not_happened releases it to received, with no call
	// started, so the next plan targets its event (nothing is replayed until a job executes); its
	// job target becomes failed. Only an uncertain row is resolved; unknown is refused.
	Resolved bool
}

// ReconcileApplied is a row a batch changed.
type ReconcileApplied struct {
	EventID       string
	EffectVersion int
	// State is reconciled, uncertain for a row marked ReviewManual, or received for a row resolved
	// not happened.
	State string
	// JobID is the row's replay job; TargetUpdated says its job target was changed too.
	JobID         string
	TargetUpdated bool
}

// ReconcileBatch is one batch of verdicts for one consumer, applied by Actor in run RunID.
type ReconcileBatch struct {
	Consumer string
	Actor    string
	// RunID ties each row's audit entry to the run's own entry.
	RunID    string
	Verdicts []ReconcileVerdict
}

// One statement: the data-modifying CTEs see the same snapshot and commit together, so a row, its
// job target and its audit entry never disagree. The compare-and-set on state, updated_at and
// reviewed_at leaves alone a row that changed since it was listed (reconciled by someone else,
// marked by a concurrent reconcile, or taken over and uncertain again after new calls). A
// reconciled row keeps its recorded calls and gains the references found (each once); its
// effect_count counts every call started, since the look-up says they happened. Its
// target (only the target of the replay that wrote the row: the job's version) counts as
// completed; a manual-review target keeps its status and says why in outcome_detail.
const effectsReconcileApply = `
with v as (
    select * from unnest($2::text[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::timestamptz[],
                         $11::boolean[], $13::boolean[])
           as v(event_id, effect_version, verdict, refs, note, seen_updated_at, seen_reviewed_at, stuck, resolved)
),
changed as (
    update effects e
       set state          = case when v.verdict = 'happened' then 'reconciled'
                                 when v.resolved then 'received' else 'uncertain' end,
           external_refs  = case when v.verdict = 'happened'
                                 then e.external_refs || coalesce((select jsonb_agg(distinct f) from jsonb_array_elements(v.refs::jsonb) f
                                                                    where not e.external_refs @> jsonb_build_array(f)), '[]'::jsonb)
                                 else e.external_refs end,
           effect_count   = case when v.verdict = 'happened' then greatest(e.effect_count, e.calls_started)
                                 else e.effect_count end,
           calls_started  = case when v.resolved and v.verdict <> 'happened' then 0 else e.calls_started end,
           review_state   = case when v.verdict = 'happened' or v.resolved then null else 'manual_review' end,
           review_verdict = v.verdict,
           review_note    = nullif(v.note, ''),
           reviewed_at    = now(),
           reviewed_by    = $9,
           lease_expires_at = null,
           updated_at     = case when v.verdict = 'happened' or v.stuck or v.resolved then now() else e.updated_at end
      from v
     where e.consumer = $1 and e.event_id = v.event_id and e.effect_version = v.effect_version
       and case when v.stuck
                then e.state = 'processing' and e.calls_started > 0
                     and e.lease_expires_at < now() - $12::bigint * interval '1 millisecond'
                else e.state = 'uncertain' end
       and (not v.resolved or v.verdict in ('happened', 'not_happened'))
       and e.updated_at = v.seen_updated_at
       and e.reviewed_at is not distinct from v.seen_reviewed_at
 returning e.event_id, e.effect_version, e.state, e.job_id, e.review_verdict, e.review_note,
           jsonb_array_length(e.external_refs) as refs, v.stuck, v.resolved
),
targets as (
    update job_targets t
       set status = case when c.state = 'reconciled' then 'completed' when c.state = 'received' then 'failed' else t.status end,
           outcome_detail = case when c.state = 'reconciled' then null
                                 when c.state = 'received'
                                 then left('resolved not_happened by ' || $9 || coalesce(': ' || c.review_note, '')
                                           || '; eligible for a new plan', 500)
                                 else left('manual review (look-up: ' || c.review_verdict || ')'
                                           || coalesce(': ' || c.review_note, ''), 500) end,
           updated_at = now()
      from changed c
      join jobs j on j.id = c.job_id and j.effect_version_to = c.effect_version
     where t.job_id = c.job_id and t.event_id = c.event_id and t.status in ('published', 'uncertain')
 returning t.job_id, t.event_id
),
audited as (
    -- Through audit_append, so each entry joins the consumer's hash chain; the main query counts
    -- these rows, which makes PostgreSQL run the CTE (a plain SELECT in WITH runs only if read).
    select audit_append(null, $9, c.job_id, null,
           case when c.resolved then 'reconcile.resolved'
                when c.state = 'reconciled' then 'reconcile.reconciled' else 'reconcile.manual_review' end,
           jsonb_build_object('run', $10::text, 'consumer', $1::text, 'eventId', c.event_id,
                              'effectVersion', c.effect_version, 'verdict', c.review_verdict,
                              'from', case when c.stuck then 'processing (stuck lease)' else 'uncertain' end,
                              'to', case when c.state = 'reconciled' then 'reconciled'
                                         when c.state = 'received' then 'received (eligible for a new plan)'
                                         else 'uncertain/manual_review' end,
                              'externalRefs', c.refs, 'detail', c.review_note), $1::text) as entry_id
      from changed c
)
select c.event_id, c.effect_version, c.state, coalesce(c.job_id, ''),
       exists (select 1 from targets t where t.job_id = c.job_id and t.event_id = c.event_id)
  from changed c
 where (select count(*) from audited) >= 0
 order by c.event_id collate "C", c.effect_version`

// EffectsReconcileApply applies b's verdicts in one statement and returns the rows it changed;
// a verdict whose row is no longer uncertain (for a stuck lease: no longer stuck), or changed
// since it was listed, changes nothing and is absent from the result. A stuck lease becomes
// reconciled, or uncertain marked for manual review, as an uncertain row does. Each changed row
// gets an audit entry (AuditReconciled or AuditManualReview, job_id = the row's job) and, when it
// belongs to a replay job, its target is updated: reconciled -> completed, manual review ->
// outcome_detail says so. A verdict marked Resolved (a person's decision, reconcile resolve) is
// audited as AuditResolved; resolved not_happened releases the row to received with no call
// started and fails its target; a resolved unknown changes nothing. A verdict other than
// the three Verdict constants is refused before anything is written.
func (s *Store) EffectsReconcileApply(ctx context.Context, b ReconcileBatch) ([]ReconcileApplied, error) {
	n := len(b.Verdicts)
	if n == 0 {
		return nil, nil
	}
	ids, versions, verdicts := make([]string, n), make([]int32, n), make([]string, n)
	refs, notes := make([]string, n), make([]string, n)
	seenUpdated, seenReviewed, stuck, resolved := make([]time.Time, n), make([]*time.Time, n), make([]bool, n), make([]bool, n)
	for i, v := range b.Verdicts {
		switch v.Verdict {
		case VerdictHappened, VerdictNotHappened, VerdictUnknown:
		default:
			return nil, fmt.Errorf("reconcile consumer %s event %q version %d: verdict %q is none of %s, %s, %s; nothing was applied",
				b.Consumer, v.EventID, v.EffectVersion, v.Verdict, VerdictHappened, VerdictNotHappened, VerdictUnknown)
		}
		ids[i], versions[i], verdicts[i] = v.EventID, int32(v.EffectVersion), v.Verdict
		refs[i], notes[i] = effectsRefs(v.FoundRefs), v.Note
		seenUpdated[i], seenReviewed[i], stuck[i], resolved[i] = v.SeenUpdatedAt, v.SeenReviewedAt, v.Stuck, v.Resolved
	}
	rows, err := s.pool.Query(ctx, effectsReconcileApply, b.Consumer, ids, versions, verdicts, refs, notes,
		seenUpdated, seenReviewed, b.Actor, b.RunID, stuck, StuckLeaseAfter.Milliseconds(), resolved)
	if err != nil {
		return nil, fmt.Errorf("apply %d look-up verdicts to the uncertain rows of consumer %s: %w", n, b.Consumer, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReconcileApplied, error) {
		var a ReconcileApplied
		err := row.Scan(&a.EventID, &a.EffectVersion, &a.State, &a.JobID, &a.TargetUpdated)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("apply %d look-up verdicts to the uncertain rows of consumer %s: %w", n, b.Consumer, err)
	}
	return out, nil
}
