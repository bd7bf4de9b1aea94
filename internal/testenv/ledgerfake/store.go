package ledgerfake

import (
	"sync"
	"time"

	"github.com/replayctl/replayctl/ledger"
)

// store is what every fake holds beside its tables: the lock over them, the database's clock and
// the audit log.
type store struct {
	mu    sync.Mutex
	audit []ledger.AuditEntry
	// Now is the store's clock, as the database's now() is; time.Now when nil.
	Now func() time.Time
}

func (s *store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// AuditActions returns the action of every audit entry written, oldest first.
func (s *store) AuditActions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.audit))
	for i, e := range s.audit {
		out[i] = e.Action
	}
	return out
}
