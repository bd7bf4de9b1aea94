package planner

import (
	"context"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/ledger"
)

// Ledger is what plan and inspect read of the ledger, and the session plan records its job in:
// *ledger.Store implements it.
type Ledger interface {
	CheckConsumer(ctx context.Context, consumer string) error
	CheckSchema(ctx context.Context) error
	ConsumerHistoryStart(ctx context.Context, consumer string) (start time.Time, ok bool, err error)
	EffectVersionsMaxKnown(ctx context.Context, consumer string) (int, error)
	EffectsApplyExpiredVerdicts(ctx context.Context, verdicts []ledger.ExpiredVerdict) (written []bool, err error)
	FingerprintAlgorithms(ctx context.Context, consumer string) ([]ledger.FingerprintAlgorithm, error)
	PlanBegin(ctx context.Context) (*ledger.PlanSession, error)
	RetentionPoliciesList(ctx context.Context, kind apikey.PolicyKind, name string) ([]apikey.Policy, error)
}

var _ Ledger = (*ledger.Store)(nil)
