package job

import (
	"context"
	"time"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/ledger"
)

// The job verbs take the small part of the ledger each needs (nats.go's composed JetStream
// interfaces): a caller such as the executor passes its own ledger without promising the rest, and
// a test passes a fake of just those methods. *ledger.Store implements them all.

// JobReader reads a job's record.
type JobReader interface {
	JobsGet(ctx context.Context, id string) (ledger.Job, error)
}

// CountReader reads a job's target and effect counts.
type CountReader interface {
	JobTargetsCount(ctx context.Context, jobID string) (map[string]int64, error)
	EffectsJobCounts(ctx context.Context, consumer string, version int, jobID string) (ledger.JobEffectCounts, error)
}

// ApprovalReader reads what a job's approval state is made of.
type ApprovalReader interface {
	ApprovalPoliciesGet(ctx context.Context, consumer string) (*approval.Policy, error)
	ApprovalsForJob(ctx context.Context, jobID string) ([]approval.Record, error)
	ShadowVerdictsLatest(ctx context.Context, jobID string) (ledger.ShadowVerdict, error)
}

// Decider records an approval or rejection.
type Decider interface {
	JobReader
	ApprovalReader
	DatabaseNow(ctx context.Context) (time.Time, error)
	ApprovalsRecord(ctx context.Context, r approval.Record, validForSeconds float64, audit ledger.AuditEntry) (approval.Record, error)
}

// Controller pauses, resumes and cancels a job.
type Controller interface {
	JobReader
	CountReader
	CheckSchema(ctx context.Context) error
	JobControl(ctx context.Context, c ledger.JobControl) error
	ExecutorAttached(ctx context.Context, jobID string) (bool, error)
}

// PolicySetter changes a consumer's approval policy.
type PolicySetter interface {
	ApprovalPoliciesGet(ctx context.Context, consumer string) (*approval.Policy, error)
	ApprovalPoliciesSet(ctx context.Context, p approval.Policy, audit ledger.AuditEntry) (approval.Policy, error)
}

var (
	_ Decider      = (*ledger.Store)(nil)
	_ Controller   = (*ledger.Store)(nil)
	_ CountReader  = (*ledger.Store)(nil)
	_ PolicySetter = (*ledger.Store)(nil)
)
