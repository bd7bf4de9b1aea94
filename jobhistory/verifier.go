package jobhistory

import (
	"context"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/ledger"
)

// Verifier is what Breaks reads: the audit chain, the signed entries and the approvals they
// cover. *ledger.Store implements it; the executor passes its own ledger.
type Verifier interface {
	AuditVerify(ctx context.Context, jobID string) (checked int64, breaks []ledger.AuditBreak, err error)
	AuditSigned(ctx context.Context, jobID string) ([]ledger.SignedAuditEntry, error)
	JobsGet(ctx context.Context, id string) (ledger.Job, error)
	ApprovalsForJob(ctx context.Context, jobID string) ([]approval.Record, error)
}

var _ Verifier = (*ledger.Store)(nil)
