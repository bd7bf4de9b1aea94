package ledger

import (
	"context"
	"fmt"
	"time"
)

// DeliveryCounts are what one SDK instance counted since its last flush.
type DeliveryCounts struct {
	// Deliveries is every message the SDK handled, redeliveries included.
	Deliveries int64
	// Duplicates is the deliveries answered from the ledger without running the handler.
	Duplicates int64
}

// The day is the database's, in UTC, so instances with skewed clocks or other time zones add to
// the same row; counts flushed just after midnight land on the new day (a few seconds' worth).
const deliveryCountsAdd = `
insert into delivery_counts as d (consumer, day, deliveries, duplicate_deliveries)
values ($1, (now() at time zone 'utc')::date, $2, $3)
on conflict (consumer, day) do update
   set deliveries           = d.deliveries + excluded.deliveries,
       duplicate_deliveries = d.duplicate_deliveries + excluded.duplicate_deliveries,
       updated_at           = now()`

// DeliveryCountsAdd adds n to consumer's counts of today (UTC, by the database clock) in one
// statement. It is not idempotent: a caller whose statement failed keeps n and adds it to the
// next flush, accepting a double count when the failure hid a commit.
func (s *Store) DeliveryCountsAdd(ctx context.Context, consumer string, n DeliveryCounts) error {
	if n == (DeliveryCounts{}) {
		return nil
	}
	if _, err := s.pool.Exec(ctx, deliveryCountsAdd, consumer, n.Deliveries, n.Duplicates); err != nil {
		return fmt.Errorf("add %d deliveries (%d duplicates) to the daily counts of consumer %s: %w",
			n.Deliveries, n.Duplicates, consumer, err)
	}
	return nil
}

// UncertainSummary is a consumer's uncertain rows now.
type UncertainSummary struct {
	Count int64
	// OldestAge is now() - updated_at of the oldest, by the database clock; 0 when none.
	OldestAge time.Duration
}

// Through effects_attention_idx (consumer, state): uncertain rows are few by nature.
const effectsUncertainSummary = `
select count(*), coalesce(max(greatest(extract(epoch from now() - updated_at) * 1000, 0)), 0)::bigint
  from effects where consumer = $1 and state = 'uncertain'`

// EffectsUncertainSummary counts consumer's uncertain rows and says how long the oldest has been
// uncertain: the SDK's uncertain_state_age_seconds gauge.
func (s *Store) EffectsUncertainSummary(ctx context.Context, consumer string) (UncertainSummary, error) {
	var u UncertainSummary
	var oldestMS int64
	if err := s.pool.QueryRow(ctx, effectsUncertainSummary, consumer).Scan(&u.Count, &oldestMS); err != nil {
		return u, fmt.Errorf("count the uncertain rows of consumer %s: %w", consumer, err)
	}
	u.OldestAge = time.Duration(oldestMS) * time.Millisecond
	return u, nil
}
