package ledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// OwnerShare is one consumer instance's share of a job's ledger rows: the rows it completed
// (completed_by, migration 0022) and the ones it holds or held last (lease_owner). Owner is empty
// for rows completed before migration 0022.
type OwnerShare struct {
	Owner string `json:"owner" db:"owner"`
	// Completed counts completed and reconciled rows, business failures included.
	Completed int64 `json:"completed" db:"completed"`
	Uncertain int64 `json:"uncertain" db:"uncertain"`
	// InProgress counts processing rows whose lease is live; Lapsed those whose lease lapsed
	// and that nobody took over (stuck, if it lasts).
	InProgress int64 `json:"inProgress" db:"in_progress"`
	Lapsed     int64 `json:"lapsed" db:"lapsed"`
	// OldestLeaseSeconds is how long ago the oldest of its processing rows was leased or last
	// renewed (heartbeat_at): seconds for a live instance, growing for a stuck one.
	OldestLeaseSeconds float64 `json:"oldestLeaseSeconds" db:"oldest_lease_seconds"`
}

// One pass over the job's rows through effects_consumer_version_job_idx, grouped by instance. A
// completed row's owner is completed_by (its lease_owner is cleared), any other's lease_owner;
// received rows have neither and are nobody's share. The SDK names each handling's lease
// "<instance>#<n>" (consumer's leaseOwner): the instance is the owner less its "#<n>".
const effectsJobOwners = `
select regexp_replace(coalesce(lease_owner, completed_by, ''), '#[0-9]+$', '') collate "C" as owner,
       count(*) filter (where state in ('completed', 'reconciled')) as completed,
       count(*) filter (where state = 'uncertain') as uncertain,
       count(*) filter (where state = 'processing' and lease_expires_at > now()) as in_progress,
       count(*) filter (where state = 'processing' and (lease_expires_at is null or lease_expires_at <= now())) as lapsed,
       coalesce(extract(epoch from now() - min(heartbeat_at) filter (where state = 'processing')), 0)::float8 as oldest_lease_seconds
  from effects
 where consumer = $1 and effect_version = $2 and job_id = $3 and state <> 'received'
 group by 1
 order by 1`

// EffectsJobOwners returns each owner's share of jobID's rows of consumer under version, by
// owner name. A read, so it is sent again after a lost connection.
func (s *Store) EffectsJobOwners(ctx context.Context, consumer string, version int, jobID string) ([]OwnerShare, error) {
	out := []OwnerShare{}
	_, err := retryLostConnection(ctx, func() error {
		rows, err := s.pool.Query(ctx, effectsJobOwners, consumer, version, jobID)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByName[OwnerShare])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the consumer instances' shares of job %s (consumer %s, version %d): %w", jobID, consumer, version, err)
	}
	return out, nil
}
