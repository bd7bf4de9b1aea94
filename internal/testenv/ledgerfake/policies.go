// Package ledgerfake holds in-memory fakes of the ledger's role interfaces, for unit tests of the
// domain packages that need no PostgreSQL. Each fake passes the same conformance suite as
// *ledger.Store (package ledgerconformance), so a test on the fake cannot rely on a behaviour the
// real ledger does not have.
package ledgerfake

import (
	"context"
	"sync"
	"time"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger"
)

// Policies keeps approval policies in memory: job.PolicySetter.
type Policies struct {
	mu       sync.Mutex
	policies map[string]approval.Policy
	audit    []ledger.AuditEntry
	// Now dates each stored policy, as the database's now() does; time.Now when nil.
	Now func() time.Time
}

var _ job.PolicySetter = (*Policies)(nil)

// NewPolicies returns an empty store of policies.
func NewPolicies() *Policies {
	return &Policies{policies: map[string]approval.Policy{}}
}

// ApprovalPoliciesGet returns consumer's policy, nil when it has none.
func (f *Policies) ApprovalPoliciesGet(_ context.Context, consumer string) (*approval.Policy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.policies[consumer]
	if !ok {
		return nil, nil
	}
	return &p, nil
}

// ApprovalPoliciesSet replaces consumer's policy and keeps its audit entry.
func (f *Policies) ApprovalPoliciesSet(_ context.Context, p approval.Policy, audit ledger.AuditEntry) (approval.Policy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p.SetAt = f.now()
	p.ValidForSeconds = p.ValidFor().Seconds()
	f.policies[p.Consumer] = p
	f.audit = append(f.audit, audit)
	return p, nil
}

// now is the store's clock: Now when set, else time.Now.
func (f *Policies) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// appendAudit keeps an audit entry a fake sharing this store's log wrote.
func (f *Policies) appendAudit(e ledger.AuditEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.audit = append(f.audit, e)
}

// Audit returns the audit entries written so far, oldest first.
func (f *Policies) Audit() []ledger.AuditEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ledger.AuditEntry(nil), f.audit...)
}
