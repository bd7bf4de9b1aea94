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

// ResolveLedger is what Resolve reads and writes: one event's rows and the verdict a person gives.
type ResolveLedger interface {
	CheckSchema(ctx context.Context) error
	EffectsOfEventForReview(ctx context.Context, consumer, eventID string) ([]ledger.UncertainRow, error)
	EffectsReconcileApply(ctx context.Context, b ledger.ReconcileBatch) ([]ledger.ReconcileApplied, error)
}

var (
	_ Ledger        = (*ledger.Store)(nil)
	_ ResolveLedger = (*ledger.Store)(nil)
)
