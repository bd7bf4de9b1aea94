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
}

// An event with no row at all has no tombstone version: left join, coalesce to 0.
const planEventsExpiredEvidence = `
select p.event_id, count(e.event_id) > 0, coalesce(max(e.effect_version) filter (where e.state = 'expired'), 0)
  from plan_events p
  left join effects e on e.consumer = $1 and e.event_id = p.event_id
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
	_, err = pgx.ForEachRow(rows, []any{&x.EventID, &x.Tombstone, &x.EffectVersion}, func() error {
		out = append(out, x)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("plan: list events whose evidence expired: %w", err)
	}
	return out, nil
}
