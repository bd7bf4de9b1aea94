package consumer

import (
	"context"
	"time"

	"github.com/replayctl/replayctl/health"
	"github.com/replayctl/replayctl/reconcile"
)

// Defaults of the reconcile worker Run starts when Config.Lookup is set.
const (
	// defaultReconcileAfter gives a provider call time to settle before it is looked up: the
	// uncertain age `replayctl ledger stats` and docs/alerts.yml warn at.
	defaultReconcileAfter    = health.MaxUncertainAge
	defaultReconcileInterval = time.Minute
	// maxReconcileWait caps the doubling wait after failed passes (no responder, the ledger down).
	maxReconcileWait = 30 * time.Minute
	// reconcileLookupTimeout is the look-up's own bound (Lookup) and a little for the round trip.
	reconcileLookupTimeout = lookupTimeout + 5*time.Second
)

// ReconcileUncertain is one pass of the reconcile worker: it asks the consumer's look-up (over
// NATS, as `replayctl reconcile` does, so any instance may answer) about the consumer's uncertain
// rows and stuck leases that have been so for ReconcileAfter and are due (never asked, or asked
// long enough ago: the wait doubles with the row's age, ledger.UncertainFilter.Due), and applies
// the verdicts with reconcile's compare-and-set: happened makes the row reconciled;
// not_happened and unknown leave it uncertain, marked for manual review, for a person to settle
// (`replayctl reconcile resolve`). Nothing is ever retried. Run calls it every
// ReconcileInterval when Lookup is set.
func (c *Consumer) ReconcileUncertain(ctx context.Context) (*reconcile.Report, error) {
	return reconcile.Run(ctx, c.cfg.Conn, c.cfg.Store, reconcile.Options{
		Consumer: c.cfg.Name, OlderThan: c.cfg.ReconcileAfter, Due: true, Timeout: reconcileLookupTimeout,
		Actor: "reconcile-worker " + c.cfg.Owner,
	})
}

// startReconcileWorker runs ReconcileUncertain now and then every ReconcileInterval, waiting
// twice as long after each failed pass (up to 30 minutes) and the interval again after a good
// one, until ctx ends or stop is called; stop cancels a pass under way (reconcile writes nothing
// before every look-up was answered, and each batch it applies is one statement) and waits for it.
func (c *Consumer) startReconcileWorker(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		wait := c.cfg.ReconcileInterval
		for {
			if c.reconcilePass(ctx) {
				wait = c.cfg.ReconcileInterval
			} else {
				wait = min(2*wait, max(maxReconcileWait, c.cfg.ReconcileInterval))
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}()
	return func() {
		cancel()
		<-finished
	}
}

// reconcilePass runs one pass and logs what it did; ok is false when the pass failed.
func (c *Consumer) reconcilePass(ctx context.Context) (ok bool) {
	r, err := c.ReconcileUncertain(ctx)
	if ctx.Err() != nil {
		return true
	}
	if err != nil {
		c.log.Warn("reconcile worker: the pass failed; the next one waits longer", "consumer", c.cfg.Name, "error", err)
		return false
	}
	if t := r.Totals; t.Listed > 0 {
		c.log.Info("reconcile worker: looked up uncertain rows", "consumer", c.cfg.Name, "run", r.RunID, "listed", t.Listed,
			"reconciled", t.Reconciled, "manual_review", t.ManualReview, "unanswered", t.Unanswered, "changed", t.Changed,
			"truncated", r.Truncated)
	}
	return true
}
