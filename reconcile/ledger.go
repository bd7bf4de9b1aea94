package reconcile

import (
	"context"

	"github.com/replayctl/replayctl/ledger"
)

// Ledger is what Run reads and writes: *ledger.Store implements it. It is an interface so that
// the consumer SDK's reconcile worker can run on the SDK's own consumer.Ledger.
type Ledger interface {
	CheckSchema(ctx context.Context) error
	EffectsUncertainPage(ctx context.Context, f ledger.UncertainFilter, after *ledger.UncertainCursor, limit int) ([]ledger.UncertainRow, error)
	EffectsReconcileApply(ctx context.Context, b ledger.ReconcileBatch) ([]ledger.ReconcileApplied, error)
	AuditInsert(ctx context.Context, e ledger.AuditEntry) error
}

var _ Ledger = (*ledger.Store)(nil)
