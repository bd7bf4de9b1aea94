package executor

import (
	"context"
	"encoding/json"
	"time"

	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobhistory"
	"github.com/replayctl/replayctl/ledger"
)

// Ledger is what execute, drain, pace, status and watch read and write, with what they pass on
// to the job verbs and the audit check: *ledger.Store implements it.
type Ledger interface {
	job.JobReader
	job.CountReader
	job.ApprovalReader
	jobhistory.Verifier
	AuditAppend(ctx context.Context, e ledger.AuditEntry) error
	CheckSchema(ctx context.Context) error
	EffectVersionsHighestOutsideJob(ctx context.Context, consumer string, version int, jobID string) (int, error)
	EffectsEventsUnderVersion(ctx context.Context, consumer string, version int, eventIDs []string) ([]string, error)
	EffectsJobItems(ctx context.Context, consumer string, version int, jobID string, kind string, limit int) ([]ledger.ReviewItem, error)
	EffectsJobOwners(ctx context.Context, consumer string, version int, jobID string) ([]ledger.OwnerShare, error)
	EffectsJobSettled(ctx context.Context, consumer string, version int, jobID string) (int64, error)
	EffectsJobRetryingSince(ctx context.Context, consumer string, version int, jobID string, since time.Time) (int64, error)
	ExecuteCancelled(ctx context.Context, e ledger.ExecuteEnd) error
	ExecuteComplete(ctx context.Context, e ledger.ExecuteEnd) error
	ExecuteGuardStopped(ctx context.Context, e ledger.ExecuteEnd) error
	ExecuteLockKept(ctx context.Context, jobID string) (*ledger.SessionLock, error)
	ExecuteStart(ctx context.Context, st ledger.ExecuteStart) error
	ExecutorAttached(ctx context.Context, jobID string) (bool, error)
	JobTargetsAnalyze(ctx context.Context) error
	JobTargetsAnySubject(ctx context.Context, jobID string) (string, error)
	JobTargetsCompletedSeqs(ctx context.Context, jobID string, pageSize int, fn func(seqs []uint64) error) error
	JobTargetsDrift(ctx context.Context, jobID string, consumer string, version int, hashAlg string, examples int) (ledger.DriftSummary, error)
	JobTargetsMarkPublished(ctx context.Context, jobID string, eventIDs []string, at time.Time) (int64, error)
	JobTargetsNotPublished(ctx context.Context, jobID string, consumer string, version int, limit int) ([]ledger.NotPublished, error)
	JobTargetsPageToPublish(ctx context.Context, p ledger.PublishPage) ([]ledger.ExecTarget, error)
	JobTargetsPublishedWithRows(ctx context.Context, jobID string, consumer string, version int) (int64, error)
	JobTargetsSetOutcome(ctx context.Context, jobID string, status string, outcomes []ledger.TargetOutcome) (int64, error)
	JobsActiveForConsumer(ctx context.Context, consumer string, exceptJobID string) ([]ledger.Job, error)
	JobsLedgerIdentity(ctx context.Context, jobID string) (planned string, current string, err error)
	JobsSetPace(ctx context.Context, c ledger.PaceChange) (ledger.PaceChanged, error)
	JobsSetRunState(ctx context.Context, jobID string, state json.RawMessage) error
}

var _ Ledger = (*ledger.Store)(nil)
