package main

import (
	"context"
	"fmt"
	"time"
)

// fillLedgerRows inserts the completed rows $2 to $3 of consumer $1 under event IDs no seeded DLQ message
// uses, settled a month ago with evidence for a year: the history a consumer has when a replay
// comes. Two external calls each, as the billing consumer makes: plan estimates a replay's calls
// from a sample of this history, and shadow refuses a replay that makes more than it said.
const fillLedgerRows = `
insert into effects (consumer, event_id, effect_version, state, request_hash, request_hash_alg, result_hash, effect_count,
                     replay_until, evidence_until, created_at, updated_at, completed_by)
select $1, 'history-' || lpad(i::text, 10, '0'), 1, 'completed', 'sha256:' || md5(i::text), 'canonical-json-v1', 'sha256:' || md5(i::text), 2,
       now() - interval '1 day', now() + interval '335 days' + (i % 86400) * interval '1 second',
       now() - interval '30 days', now() - interval '30 days', 'scalebench'
  from generate_series($2::bigint, $3::bigint) i`

// fillLedger puts rows completed rows of the consumer in the ledger, a million per statement,
// then analyzes the table as autovacuum would have by the time such a history exists.
func (b *bench) fillLedger(ctx context.Context, rows int) error {
	if rows <= 0 {
		return nil
	}
	logf("filling the ledger with %d completed rows of %s (not timed)", rows, consumerName)
	start := time.Now()
	const step = 1_000_000
	for from := 1; from <= rows; from += step {
		to := min(from+step-1, rows)
		if _, err := b.db.Exec(ctx, fillLedgerRows, consumerName, from, to); err != nil {
			return fmt.Errorf("fill the ledger (rows %d to %d): %w", from, to, err)
		}
	}
	if _, err := b.db.Exec(ctx, "vacuum analyze effects"); err != nil {
		return fmt.Errorf("vacuum the filled ledger: %w", err)
	}
	// The fill dirtied gigabytes of pages; flushed by the checkpointer while the run is timed,
	// they would be charged to the run (it measured 0.82x of an empty ledger without this).
	if _, err := b.db.Exec(ctx, "checkpoint"); err != nil {
		logf("checkpoint after the fill (needs a superuser or pg_checkpoint): %v; the run may pay for the fill's writes", err)
	}
	logf("filled %d rows in %s", rows, time.Since(start).Round(time.Second))
	return nil
}
