package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// EffectExpired is the state of a tombstone: a row whose evidence_until passed (docs/ledger.md,
// "Expired evidence").
const EffectExpired = "expired"

// AuditEvidenceExpired is the audit action of a look-up's verdict applied to an event whose
// evidence expired (a tombstone, or no row for an old message).
const AuditEvidenceExpired = "consumer.evidence_expired"

// ExpiredVerdict is a look-up's answer about an event whose ledger evidence expired, to be
// recorded on its row Key: reconciled when it happened, uncertain for manual review otherwise.
type ExpiredVerdict struct {
	Key            EffectKey
	RequestHash    string
	RequestHashAlg string
	// Verdict is VerdictHappened (the row becomes reconciled) or VerdictUnknown (uncertain, marked
	// manual_review). VerdictNotHappened is recorded by EffectsReopenExpired instead.
	Verdict string
	// Note is the look-up's detail, or why there was none: IDs and counts, no payload.
	Note string
	// ExternalRefs are the references the look-up found (a JSON array of effects); for a
	// tombstone they are appended to those it kept.
	ExternalRefs json.RawMessage
	// JobID is the replay job of the delivery; empty for a live message.
	JobID string
	// Actor names who applied the verdict (the SDK instance) in reviewed_by and the audit log.
	Actor string
	// EvidenceRetention dates a reconciled row's new evidence_until from now(): the look-up is
	// fresh evidence.
	EvidenceRetention time.Duration
}

// The upsert writes a row that was not there (its tombstone was deleted too) or turns the
// tombstone at Key into the verdict's row; any other row at Key (someone settled or claimed it
// since it was read) is left alone. The audit entry is written with it, in one statement.
const effectsApplyExpiredVerdict = `
with settled as (
    insert into effects as e (consumer, event_id, effect_version, state, request_hash, request_hash_alg,
                              external_refs, effect_count, job_id, last_error, review_state, review_verdict,
                              review_note, reviewed_at, reviewed_by, replay_until, evidence_until)
    values ($1, $2, $3, $4::text, $5, $6, $7::jsonb, jsonb_array_length($7::jsonb), $8, $9, $10, $11, $12, now(), $13,
            case when $4::text = 'reconciled' then now() end,
            case when $4::text = 'reconciled' then now() + $14::bigint * interval '1 millisecond' end)
    on conflict (consumer, event_id, effect_version) do update
       set state = excluded.state,
           external_refs = e.external_refs || coalesce((select jsonb_agg(distinct f) from jsonb_array_elements(excluded.external_refs) f
                                                          where not e.external_refs @> jsonb_build_array(f)), '[]'::jsonb),
           last_error = excluded.last_error, review_state = excluded.review_state,
           review_verdict = excluded.review_verdict, review_note = excluded.review_note,
           reviewed_at = excluded.reviewed_at, reviewed_by = excluded.reviewed_by,
           replay_until = excluded.replay_until, evidence_until = excluded.evidence_until, updated_at = now()
     where e.state = 'expired'
    returning e.event_id)
select audit_append(null, $13, $8, null, '` + AuditEvidenceExpired + `',
       jsonb_build_object('consumer', $1::text, 'eventId', $2::text, 'effectVersion', $3::int,
                          'verdict', $11::text, 'state', $4::text, 'detail', $12::text), $1::text)
  from settled`

// EffectsApplyExpiredVerdict records v on its row: reconciled for happened (the handler is not
// run), uncertain with review_state manual_review for anything else (never run automatically).
// False means the row at v.Key is neither missing nor a tombstone any more: another instance
// wrote it since it was read, and the caller reads it again.
func EffectsApplyExpiredVerdict(ctx context.Context, q Querier, v ExpiredVerdict) (bool, error) {
	tag, err := q.Exec(ctx, effectsApplyExpiredVerdict, v.args()...)
	if err != nil {
		return false, v.failed(err)
	}
	return tag.RowsAffected() == 1, nil
}

// EffectsApplyExpiredVerdicts records each verdict as EffectsApplyExpiredVerdict does, in one
// round trip; written[i] says whether verdicts[i] was written.
func (s *Store) EffectsApplyExpiredVerdicts(ctx context.Context, verdicts []ExpiredVerdict) (written []bool, err error) {
	if len(verdicts) == 0 {
		return nil, nil
	}
	batch := &pgx.Batch{}
	for _, v := range verdicts {
		batch.Queue(effectsApplyExpiredVerdict, v.args()...)
	}
	results := s.pool.SendBatch(ctx, batch)
	defer results.Close()
	written = make([]bool, len(verdicts))
	for i, v := range verdicts {
		tag, err := results.Exec()
		if err != nil {
			return written[:i], v.failed(err)
		}
		written[i] = tag.RowsAffected() == 1
	}
	return written, nil
}

func (v ExpiredVerdict) args() []any {
	state, review, lastError := EffectReconciled, any(nil), any(nil)
	if v.Verdict != VerdictHappened {
		state, review = "uncertain", ReviewManual
		lastError = "the ledger's evidence of this event expired and the look-up did not prove what happened (" + v.Verdict +
			"): review it by hand"
	}
	return []any{v.Key.Consumer, v.Key.EventID, v.Key.EffectVersion, state,
		v.RequestHash, v.RequestHashAlg, effectsRefs(v.ExternalRefs), nullable(v.JobID), lastError, review, v.Verdict,
		nullable(v.Note), v.Actor, v.EvidenceRetention.Milliseconds()}
}

func (v ExpiredVerdict) failed(err error) error {
	return fmt.Errorf("record look-up verdict %s for %s, whose evidence expired: %w", v.Verdict, v.Key, translate(err))
}

// Reopened tombstones lose their dates, so the next prune does not take them for expired again,
// and keep final_state and the verdict as their history. A compact tombstone (no effects row of
// its version) is reopened as a new received row with that history, which then takes its place;
// the compact row stays, unread while the effects row exists.
var effectsReopenExpired = `
with reopened as (
    update effects
       set state = 'received', replay_until = null, evidence_until = null, review_verdict = 'not_happened',
           review_note = $4, reviewed_at = now(), reviewed_by = $5, updated_at = now()
     where consumer = $1 and event_id = $2 and effect_version = any($3::int[]) and state = 'expired'
    returning effect_version, job_id),
compact as (
    select distinct t.effect_version,
           case when t.flags & ` + fmt.Sprint(compactFlagReconciled) + ` <> 0 then 'reconciled' else 'completed' end as final_state
      from effect_tombstones t
     where t.key = effect_tombstone_key($1::text, $2::text) and t.effect_version = any($3::int[])
       and not exists (select 1 from effects x where x.consumer = $1 and x.event_id = $2 and x.effect_version = t.effect_version)),
revived as (
    insert into effects (consumer, event_id, effect_version, state, final_state, request_hash, request_hash_alg,
                         review_verdict, review_note, reviewed_at, reviewed_by)
    select $1, $2, c.effect_version, 'received', c.final_state, 'none', 'none', 'not_happened', $4, now(), $5
      from compact c
    on conflict (consumer, event_id, effect_version) do nothing
    returning effect_version, job_id)
select audit_append(null, $5, job_id, null, '` + AuditEvidenceExpired + `',
       jsonb_build_object('consumer', $1::text, 'eventId', $2::text, 'effectVersion', effect_version,
                          'verdict', 'not_happened', 'state', 'received', 'detail', $4::text), $1::text)
  from (select * from reopened union all select * from revived) r`

// EffectsReopenExpired turns the tombstones of eventID under versions back into received rows,
// after the look-up said the event's effect did not happen: the event is then claimed and
// processed like a new one. It returns how many tombstones it reopened.
func EffectsReopenExpired(ctx context.Context, q Querier, consumer, eventID string, versions []int, note, actor string) (int64, error) {
	tag, err := q.Exec(ctx, effectsReopenExpired, consumer, eventID, versions, nullable(note), actor)
	if err != nil {
		return 0, fmt.Errorf("reopen the expired rows of consumer %s event %q: %w", consumer, eventID, translate(err))
	}
	return tag.RowsAffected(), nil
}
