package ledger

import (
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Tx is the session's transaction, for tests that lay out its temporary tables by hand.
func (p *PlanSession) Tx() pgx.Tx { return p.tx }

// Pool is the store's own pool, for this package's tests of what the store does with its
// connections (a killed session, a statement sent again) and of its tables.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// SDKStatements are the statements the SDK sends for every message, by name.
var SDKStatements = map[string]string{
	"effectsForEvent": effectsForEvent, "effectsForEvents": effectsForEvents,
	"effectsClaim": effectsClaim, "effectsClaimBatch": effectsClaimBatch,
	"effectsCallStarted": effectsCallStarted, "effectsCallStartedBatch": effectsCallStartedBatch,
	"effectsHeartbeat": effectsHeartbeat, "effectsHeartbeatBatch": effectsHeartbeatBatch,
	"effectsComplete": effectsComplete, "effectsCompleteBatch": effectsCompleteBatch,
}

// ClaimWithoutFlush is the batch a claim starts with, for the test of its commit setting.
var ClaimWithoutFlush = claimWithoutFlush

// TombstoneKey is the tombstone key the SDK computes in Go, for the test that SQL agrees.
var TombstoneKey = tombstoneKey
