package jobhistory

import (
	"context"
	"fmt"

	"github.com/replayctl/replayctl/fault"
	"github.com/replayctl/replayctl/ledger"
)

// ErrAuditBroken means an audit entry was changed, deleted or inserted around replayctl: the
// log cannot be trusted for the job (exit 3).
var ErrAuditBroken = fault.New(fault.Refused, "the audit chain is broken")

// AuditVerification is what `replayctl log --verify` found.
type AuditVerification struct {
	// JobID is the job checked; empty when the whole log was.
	JobID   string              `json:"jobId,omitempty"`
	Checked int64               `json:"checked"`
	Breaks  []ledger.AuditBreak `json:"breaks"`
}

// VerifyAudit checks the hash chain of jobID's audit entries (every entry when jobID is empty):
// each entry's hash over its fields and its link to the entry before it in its consumer's chain.
// A broken chain is returned with an error matching ErrAuditBroken that names the first break.
func VerifyAudit(ctx context.Context, store *ledger.Store, jobID string) (*AuditVerification, error) {
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	if jobID != "" {
		// An unknown job has no entries: "0 verified" would read as a clean log (exit 2 instead).
		if _, err := store.JobsGet(ctx, jobID); err != nil {
			return nil, err
		}
	}
	n, breaks, err := store.AuditVerify(ctx, jobID)
	if err != nil {
		return nil, err
	}
	v := &AuditVerification{JobID: jobID, Checked: n, Breaks: append([]ledger.AuditBreak{}, breaks...)}
	if len(breaks) == 0 {
		return v, nil
	}
	b := breaks[0]
	return v, fmt.Errorf("%w at entry #%d (%s of chain %s): %s; %d of %d entries checked do not hold (`replayctl log --verify --json` lists them)",
		ErrAuditBroken, b.ID, b.Action, b.Chain, b.Why, len(breaks), n)
}
