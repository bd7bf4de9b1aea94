package ledger

import (
	"context"
	"time"
)

// Store methods for the statements the consumer SDK runs one at a time on the pool, each outside
// any transaction of the caller's (consumer.Ledger names them). The package-level functions they
// call take a Querier so that replayctl's own commands can run the same statements inside a
// transaction.

// EffectsForEvent runs the package-level EffectsForEvent on the pool, batched with other
// handlers' reads of other events (groupread.go).
func (s *Store) EffectsForEvent(ctx context.Context, consumer, eventID string) ([]EffectRow, error) {
	if s.reads == nil {
		return EffectsForEvent(ctx, s.pool, consumer, eventID)
	}
	return s.reads.read(ctx, consumer, eventID)
}

// EffectsClaim runs the package-level EffectsClaim on the pool, batched with other handlers'
// claims of other events (groupcommit.go), without waiting for its commit's flush
// (claimWithoutFlush).
func (s *Store) EffectsClaim(ctx context.Context, c EffectClaim) (bool, error) {
	if s.group == nil {
		return effectsClaimOnPool(ctx, s.pool, c)
	}
	event := EffectKey{Consumer: c.Key.Consumer, EventID: c.Key.EventID, EffectVersion: -1}
	return s.group.claim.submitRequest(ctx, &groupRequest[EffectClaim]{key: c.Key, event: &event, arg: c})
}

// EffectsHeartbeat runs the package-level EffectsHeartbeat on the pool, batched with other
// handlers' heartbeats (groupcommit.go).
func (s *Store) EffectsHeartbeat(ctx context.Context, key EffectKey, owner string, lease time.Duration) (bool, error) {
	if s.group == nil {
		return EffectsHeartbeat(ctx, s.pool, key, owner, lease)
	}
	return s.group.heartbeat.submit(ctx, key, heartbeatArg{owner: owner, lease: lease})
}

// EffectsCallStarted runs the package-level EffectsCallStarted on the pool, batched with other
// handlers' marks; it returns once its own row's mark committed, so the call still follows it.
func (s *Store) EffectsCallStarted(ctx context.Context, key EffectKey, owner string, ordinal int) (bool, error) {
	if s.group == nil {
		return EffectsCallStarted(ctx, s.pool, key, owner, ordinal)
	}
	return s.group.callStarted.submit(ctx, key, callStartedArg{owner: owner, ordinal: ordinal})
}

// EffectsComplete runs the package-level EffectsComplete on the pool, batched with other
// handlers' completions.
func (s *Store) EffectsComplete(ctx context.Context, c EffectCompletion) (bool, error) {
	if s.group == nil {
		return EffectsComplete(ctx, s.pool, c)
	}
	return s.group.complete.submit(ctx, c.Key, c)
}

// EffectsRelease runs the package-level EffectsRelease on the pool.
func (s *Store) EffectsRelease(ctx context.Context, key EffectKey, owner, lastError string) (bool, error) {
	return EffectsRelease(ctx, s.pool, key, owner, lastError)
}

// EffectsMarkUncertain runs the package-level EffectsMarkUncertain on the pool.
func (s *Store) EffectsMarkUncertain(ctx context.Context, u EffectUncertainty) (bool, error) {
	return EffectsMarkUncertain(ctx, s.pool, u)
}

// EffectsMarkLapsedUncertain runs the package-level EffectsMarkLapsedUncertain on the pool.
func (s *Store) EffectsMarkLapsedUncertain(ctx context.Context, key EffectKey) (bool, error) {
	return EffectsMarkLapsedUncertain(ctx, s.pool, key)
}

// EffectsReopenExpired runs the package-level EffectsReopenExpired on the pool.
func (s *Store) EffectsReopenExpired(ctx context.Context, consumer, eventID string, versions []int, note, actor string) (int64, error) {
	return EffectsReopenExpired(ctx, s.pool, consumer, eventID, versions, note, actor)
}

// EffectsApplyExpiredVerdict runs the package-level EffectsApplyExpiredVerdict on the pool.
func (s *Store) EffectsApplyExpiredVerdict(ctx context.Context, v ExpiredVerdict) (bool, error) {
	return EffectsApplyExpiredVerdict(ctx, s.pool, v)
}

// EffectIncidentsInsert runs the package-level EffectIncidentsInsert on the pool.
func (s *Store) EffectIncidentsInsert(ctx context.Context, inc EffectIncident) error {
	return EffectIncidentsInsert(ctx, s.pool, inc)
}

// EffectVersionsIsExecuting runs the package-level EffectVersionsIsExecuting on the pool.
func (s *Store) EffectVersionsIsExecuting(ctx context.Context, consumer string, version int, jobID string) (ExecutingReplay, error) {
	return EffectVersionsIsExecuting(ctx, s.pool, consumer, version, jobID)
}

// AuditInsert runs the package-level AuditInsert on the pool.
func (s *Store) AuditInsert(ctx context.Context, e AuditEntry) error {
	return AuditInsert(ctx, s.pool, e)
}

// GroupCommitStats says how the SDK's call-started marks, completions and heartbeats were sent.
func (s *Store) GroupCommitStats() GroupCommitStats {
	var st GroupCommitStats
	if s.group != nil {
		st = s.group.stats()
	}
	if s.reads != nil {
		st.ReadStatements, st.ReadEvents, st.ReadTime = s.reads.stats()
	}
	return st
}
