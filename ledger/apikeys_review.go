package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/apikey"
)

const apiKeysResolve = `
update api_keys
   set state = 'reconciled', resolution = $3, external_ref = coalesce(nullif($4, ''), external_ref),
       note = nullif($5, ''), evidence_until = coalesce(evidence_until, now() + $6::bigint * interval '1 millisecond'),
       replay_until = coalesce(replay_until, now()), lease_expires_at = null, updated_at = now()
 where scope_hash = $1 and key_hash = $2
   and (state = 'uncertain' or (state = 'processing' and lease_expires_at <= now() and calls_started > 0))`

// APIKeysSettle settles an uncertain record (or one processing under a lease that lapsed after a
// call started) as a look-up answered; false when it is neither (already settled, or never was).
func (s *Store) APIKeysSettle(ctx context.Context, r apikey.Settlement) (bool, error) {
	return s.APIKeysResolve(ctx, r, AuditEntry{})
}

// APIKeysResolve settles an uncertain record as a person decided, with audit (when its Action is
// set) in the same transaction; false when it is not uncertain.
func (s *Store) APIKeysResolve(ctx context.Context, r apikey.Settlement, audit AuditEntry) (bool, error) {
	var settled bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, apiKeysResolve, r.Key.ScopeHash, r.Key.KeyHash, string(r.Resolution), r.ExternalRef,
			r.Note, r.EvidenceWindow.Milliseconds())
		if err != nil {
			return err
		}
		settled = tag.RowsAffected() == 1
		if settled && audit.Action != "" {
			return AuditInsert(ctx, tx, audit)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("resolve an API record: %w", err)
	}
	return settled, nil
}

// apiKeysLapse turns every processing record of the routes whose lease lapsed after a call
// started into uncertain, in one statement: the owners died or stalled.
const apiKeysLapse = `
update api_keys set state = 'uncertain', lease_expires_at = null,
       note = 'the lease lapsed after an external call started', updated_at = now()
 where route = any($1) and state = 'processing' and lease_expires_at <= now() and calls_started > 0`

const apiKeysUncertain = `
select ` + apiKeyColumns + `
  from api_keys
 where route = any($1) and state = 'uncertain' and updated_at <= now() - $2::bigint * interval '1 millisecond'
 order by updated_at
 limit $3`

// APIKeysNeedingLookUp marks the lapsed records of routes uncertain, then returns up to limit
// uncertain records that have stood at least minAge, oldest first: the reconcile worker's work.
func (s *Store) APIKeysNeedingLookUp(ctx context.Context, routes []string, minAge time.Duration, limit int) (lapsed int64, recs []apikey.Record, err error) {
	tag, err := s.pool.Exec(ctx, apiKeysLapse, routes)
	if err != nil {
		return 0, nil, fmt.Errorf("mark lapsed API records uncertain: %w", err)
	}
	rows, err := s.pool.Query(ctx, apiKeysUncertain, routes, minAge.Milliseconds(), limit)
	if err != nil {
		return 0, nil, fmt.Errorf("list uncertain API records: %w", err)
	}
	recs, err = pgx.CollectRows(rows, scanAPIKey)
	if err != nil {
		return 0, nil, fmt.Errorf("list uncertain API records: %w", err)
	}
	return tag.RowsAffected(), recs, nil
}

const apiKeysUncertainOfRoute = `
select ` + apiKeyColumns + `
  from api_keys
 where ($1 = '' or route = $1) and (state = 'uncertain' or (state = 'processing' and lease_expires_at <= now() and calls_started > 0))
 order by updated_at
 limit $2`

// APIKeysUncertain lists up to limit records awaiting a decision (uncertain, or processing with a
// lapsed lease after a call started) of route, or of every route when it is empty, oldest first.
func (s *Store) APIKeysUncertain(ctx context.Context, route string, limit int) ([]apikey.Record, error) {
	rows, err := s.pool.Query(ctx, apiKeysUncertainOfRoute, route, limit)
	if err != nil {
		return nil, fmt.Errorf("list uncertain API records: %w", err)
	}
	recs, err := pgx.CollectRows(rows, scanAPIKey)
	if err != nil {
		return nil, fmt.Errorf("list uncertain API records: %w", err)
	}
	return recs, nil
}
