package ledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// PlanExpiredEvidence is an event plan kept out because the ledger's evidence of it expired.
type PlanExpiredEvidence struct {
	EventID string
	// Tombstone says the event has expired rows; false when it has no row at all and its message
	// is older than the evidence window.
	Tombstone bool
	// EffectVersion is the highest version with a tombstone; 0 without one.
	EffectVersion int
	// RequestHash and RequestHashAlg are the tombstone's fingerprint, or without one the DLQ
	// payload's under the consumer's current algorithm (the first passed to Classify, whose name
	// the caller knows: RequestHashAlg is then empty).
	RequestHash    string
	RequestHashAlg string
	// ExternalRefs are the references the latest tombstone kept (a JSON array; [] without one).
	ExternalRefs []byte
	// TombstoneVersions are the versions with a tombstone, all of which a not-happened verdict reopens.
	TombstoneVersions []int
}

// An event with no row at all has no tombstone version: left join, coalesce to 0. A tombstone
// without a fingerprint (imported without one, or compact) gives the DLQ payload's instead.
var planEventsExpiredEvidence = `
select p.event_id, count(e.effect_version) > 0, coalesce(max(e.effect_version) filter (where e.state = 'expired'), 0),
       coalesce((array_agg(e.request_hash order by e.effect_version desc) filter (where e.state = 'expired' and e.request_hash_alg <> 'none'))[1], min(f.fingerprints[1])),
       coalesce((array_agg(e.request_hash_alg order by e.effect_version desc) filter (where e.state = 'expired' and e.request_hash_alg <> 'none'))[1], ''),
       coalesce((array_agg(e.external_refs order by e.effect_version desc) filter (where e.state = 'expired'))[1], '[]'::jsonb),
       coalesce(array_agg(e.effect_version) filter (where e.state = 'expired'), '{}')
  from plan_events p
  join ` + planFirst + ` f on f.event_id = p.event_id
  left join lateral ` + planLedgerRows("$1::text", "p.event_id") + ` e on true
 where p.class = 'evidence_expired'
 group by p.event_id
 order by p.event_id collate "C"`

// ExpiredEvidence lists the event IDs classed evidence_expired, in byte order.
func (p *PlanSession) ExpiredEvidence(ctx context.Context, consumer string) ([]PlanExpiredEvidence, error) {
	rows, err := p.tx.Query(ctx, planEventsExpiredEvidence, consumer)
	if err != nil {
		return nil, fmt.Errorf("plan: list events whose evidence expired: %w", err)
	}
	var out []PlanExpiredEvidence
	var x PlanExpiredEvidence
	_, err = pgx.ForEachRow(rows, []any{&x.EventID, &x.Tombstone, &x.EffectVersion, &x.RequestHash, &x.RequestHashAlg, &x.ExternalRefs, &x.TombstoneVersions}, func() error {
		out = append(out, x)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("plan: list events whose evidence expired: %w", err)
	}
	return out, nil
}

// planEventsSettleExpired re-classes evidence_expired events by the look-up's verdict: $1 happened
// (recorded reconciled: kept out), $2 not happened (targets, their ledger states read again since
// their tombstones were reopened). Any other event stays kept out.
const planEventsSettleExpired = `
update plan_events p
   set class = case when p.event_id = any($1::text[]) then 'evidence_reconciled' else 'target' end,
       ledger_states = case when p.event_id = any($1::text[]) then p.ledger_states
                            else coalesce((select ` + ledgerStatesAgg + ` from effects e
                                            where e.consumer = $3 and e.event_id = p.event_id), '') end
 where p.class = 'evidence_expired' and (p.event_id = any($1::text[]) or p.event_id = any($2::text[]))`

// SettleExpired applies the consumer's look-up verdicts on evidence_expired events inside the
// plan: happened ones (whose reconciled verdict the caller recorded) are kept out as
// evidence_reconciled; not happened ones have their tombstones reopened (EffectsReopenExpired, so
// the replay's claim is not refused by them) and become targets. maxTargets > 0 then keeps only
// the oldest maxTargets targets again. Nothing of it stays if the plan is not committed.
func (p *PlanSession) SettleExpired(ctx context.Context, consumer string, happened []string, notHappened []PlanExpiredEvidence,
	note, actor string, maxTargets int) error {
	if len(happened)+len(notHappened) == 0 {
		return nil
	}
	batch := &pgx.Batch{}
	ids := make([]string, len(notHappened))
	for i, x := range notHappened {
		ids[i] = x.EventID
		if len(x.TombstoneVersions) > 0 {
			batch.Queue(effectsReopenExpired, consumer, x.EventID, x.TombstoneVersions, nullable(note), actor)
		}
	}
	if batch.Len() > 0 {
		if err := p.tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("plan: reopen the tombstones the look-up said did not happen: %w", translate(err))
		}
	}
	if _, err := p.tx.Exec(ctx, planEventsSettleExpired, happened, ids, consumer); err != nil {
		return fmt.Errorf("plan: apply the look-up's verdicts on expired evidence: %w", err)
	}
	if maxTargets > 0 {
		if _, err := p.tx.Exec(ctx, planEventsApplyMax, maxTargets); err != nil {
			return fmt.Errorf("plan: apply --max %d: %w", maxTargets, err)
		}
	}
	return nil
}
