package conformance

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/replayctl/replayctl/ledger"
)

// The reconcile worker's timing the kit gives the consumer (ReconcileAfterEnv,
// ReconcileIntervalEnv): seconds, not the production quarter of an hour.
const (
	ReconcileAfterEnv    = "REPLAYCTL_RECONCILE_AFTER"
	ReconcileIntervalEnv = "REPLAYCTL_RECONCILE_INTERVAL"
	ReconcileAfter       = 2 * time.Second
	ReconcileInterval    = time.Second
)

// reconcileWorker leaves an uncertain row behind (another instance started the charge and died;
// the provider did charge) and waits for the consumer's own reconcile worker to ask its look-up
// and settle the row reconciled, with no second charge, without anyone running replayctl.
func reconcileWorker(ctx context.Context, e *Env) error {
	id := e.event("worker")
	payload := order(id, 100)
	const lease = 300 * time.Millisecond
	if err := e.claimAsAnotherInstance(ctx, id, payload, lease, 1); err != nil {
		return err
	}
	// The dead instance had recorded the order and the provider charged it.
	if err := e.Records.RecordOrder(ctx, id, "order-"+id); err != nil {
		return err
	}
	if err := e.chargedBefore(ctx, id, 100); err != nil {
		return err
	}
	time.Sleep(lease + 100*time.Millisecond)
	if ok, err := ledger.EffectsMarkLapsedUncertain(ctx, e.Seed, ledger.EffectKey{Consumer: ConsumerName, EventID: id, EffectVersion: 1}); err != nil || !ok {
		return fmt.Errorf("leave %s uncertain: %t, %v", id, ok, err)
	}
	r, err := e.waitRow(ctx, id, 1, stateReconciled)
	if err != nil {
		return fmt.Errorf("the consumer's reconcile worker (%s=%s, %s=%s) did not settle the row: %w",
			ReconcileAfterEnv, ReconcileAfter, ReconcileIntervalEnv, ReconcileInterval, err)
	}
	if r.ReviewVerdict != "happened" || !strings.HasPrefix(r.ReviewedBy, "reconcile-worker") {
		return fmt.Errorf("the row of %s was reconciled by %q with verdict %q, want the consumer's reconcile worker and happened", id, r.ReviewedBy, r.ReviewVerdict)
	}
	return e.wantCharges(ctx, id, 1)
}
