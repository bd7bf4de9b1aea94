package shadow

import (
	"context"

	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger"
)

// Ledger is what the shadow pass reads and records: *ledger.Store implements it.
type Ledger interface {
	job.JobReader
	CheckSchema(ctx context.Context) error
	EffectsOriginals(ctx context.Context, consumer string, eventIDs []string, belowVersion int) (map[string]ledger.Original, error)
	JobTargetsAnalyze(ctx context.Context) error
	JobTargetsPageBySeq(ctx context.Context, jobID string, afterSeq uint64, limit int) ([]ledger.ShadowTarget, error)
	JobTargetsRecordShadow(ctx context.Context, jobID string, outcomes []ledger.ShadowOutcome) error
	JobTargetsSample(ctx context.Context, jobID string, seed string, quotas map[string]int, stratumOf map[string]string) ([]ledger.ShadowTarget, error)
	ShadowLockKept(ctx context.Context, jobID string) (*ledger.SessionLock, error)
	ShadowRecordVerdict(ctx context.Context, v ledger.ShadowVerdict, t ledger.JobTransition, audit ledger.AuditEntry) error
	ShadowStart(ctx context.Context, st ledger.ShadowStart) error
	ShadowStopped(ctx context.Context, t ledger.JobTransition, audit ledger.AuditEntry) error
}

var _ Ledger = (*ledger.Store)(nil)
