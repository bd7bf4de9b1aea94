package consumer

import (
	"context"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/reconcile"
)

// Ledger is every read and write the SDK makes to the ledger, each a statement of its own on the
// pool (no transaction spans two of them); *ledger.Store implements it, and Config.Store takes
// the store ledger.Open returns. Its rows and their states are described in docs/ledger.md.
type Ledger interface {
	// One event's rows and their lease: read, claim, keep, and the record before each call.
	EffectsForEvent(ctx context.Context, consumer, eventID string) ([]ledger.EffectRow, error)
	EffectsClaim(ctx context.Context, c ledger.EffectClaim) (bool, error)
	EffectsHeartbeat(ctx context.Context, key ledger.EffectKey, owner string, lease time.Duration) (bool, error)
	EffectsCallStarted(ctx context.Context, key ledger.EffectKey, owner string, ordinal int) (bool, error)

	// How a handling ends: completed, released for a redelivery, or uncertain.
	EffectsComplete(ctx context.Context, c ledger.EffectCompletion) (bool, error)
	EffectsRelease(ctx context.Context, key ledger.EffectKey, owner, lastError string) (bool, error)
	EffectsMarkUncertain(ctx context.Context, u ledger.EffectUncertainty) (bool, error)
	EffectsMarkLapsedUncertain(ctx context.Context, key ledger.EffectKey) (bool, error)

	// Expired evidence settled by the consumer's look-up (docs/ledger.md, "Expired evidence").
	EffectsReopenExpired(ctx context.Context, consumer, eventID string, versions []int, note, actor string) (int64, error)
	EffectsApplyExpiredVerdict(ctx context.Context, v ledger.ExpiredVerdict) (bool, error)

	// Whether a replayed message belongs to the job executing its version; and a replay the SDK
	// dead-lettered, failed in its job's targets so the job can finish (deadLetter).
	EffectVersionsIsExecuting(ctx context.Context, consumer string, version int, jobID string) (ledger.ExecutingReplay, error)
	JobTargetsSetOutcome(ctx context.Context, jobID, status string, outcomes []ledger.TargetOutcome) (int64, error)

	// Fingerprint algorithms, incidents and the counts behind `replayctl ledger stats` and the metrics.
	FingerprintAlgorithmRegister(ctx context.Context, consumer, algorithm, options string) error
	FingerprintAlgorithms(ctx context.Context, consumer string) ([]ledger.FingerprintAlgorithm, error)
	EffectIncidentsInsert(ctx context.Context, inc ledger.EffectIncident) error
	DeliveryCountsAdd(ctx context.Context, consumer string, n ledger.DeliveryCounts) error
	EffectsUncertainSummary(ctx context.Context, consumer string) (ledger.UncertainSummary, error)

	// The server's replication, for the warning when a failover may lose acknowledged rows.
	Replication(ctx context.Context) (ledger.Replication, error)

	// The retention contract plan reads instead of asking the operator (registerRetention).
	RetentionPoliciesRegister(ctx context.Context, policies []apikey.Policy) error

	// The reconcile worker's reads and writes (Config.Lookup).
	reconcile.Ledger
}

var _ Ledger = (*ledger.Store)(nil)
