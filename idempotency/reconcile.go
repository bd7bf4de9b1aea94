package idempotency

import (
	"context"
	"time"

	"github.com/replayctl/replayctl/apikey"
)

// ReconcileReport is what one reconcile pass did.
type ReconcileReport struct {
	// Lapsed are processing records whose lease lapsed after a call started, now uncertain.
	Lapsed int64
	// Asked, Happened, NotHappened and Unknown count the look-ups and their verdicts; an unknown
	// record stays uncertain for a person (`replayctl keys resolve`).
	Asked, Happened, NotHappened, Unknown int
}

// reconcileBatch bounds one pass, so a backlog is worked through in passes.
const reconcileBatch = 100

// ReconcileOnce settles what it can of the uncertain records of the routes with a Lookup: records
// whose lease lapsed after a call started become uncertain, then each uncertain record that has
// stood minAge is looked up once; happened and not-happened settle it (a retry is then told it
// happened, or runs), unknown leaves it for a person.
func (k *Keeper) ReconcileOnce(ctx context.Context, minAge time.Duration) (ReconcileReport, error) {
	var rep ReconcileReport
	var names []string
	for name, rt := range k.routes {
		if rt.Lookup != nil {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return rep, nil
	}
	lapsed, recs, err := k.cfg.Store.APIKeysNeedingLookUp(ctx, names, minAge, reconcileBatch)
	if err != nil {
		return rep, err
	}
	rep.Lapsed = lapsed
	for _, rec := range recs {
		rt := k.routes[rec.Route]
		res, err := rt.Lookup(ctx, LookupRequest{Route: rec.Route, OperationID: apikey.OperationID(rec.ScopeHash, rec.KeyHash), ExternalRef: rec.ExternalRef})
		rep.Asked++
		k.metrics.lookups.WithLabelValues(rec.Route, lookupLabel(res.Verdict, err)).Inc()
		if err != nil || (res.Verdict != VerdictHappened && res.Verdict != VerdictNotHappened) {
			rep.Unknown++
			continue
		}
		_, err = k.cfg.Store.APIKeysSettle(ctx, apikey.Settlement{Key: apikey.Key{ScopeHash: rec.ScopeHash, KeyHash: rec.KeyHash},
			Resolution: apikey.Resolution(res.Verdict), ExternalRef: res.ExternalRef, Note: "look-up: " + res.Detail, EvidenceWindow: rt.evidence})
		if err != nil {
			return rep, err
		}
		if res.Verdict == VerdictHappened {
			rep.Happened++
		} else {
			rep.NotHappened++
		}
	}
	return rep, nil
}

// RunReconciler runs ReconcileOnce every interval until ctx ends, logging what it settled: the
// reconcile worker of an API service.
func (k *Keeper) RunReconciler(ctx context.Context, interval, minAge time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rep, err := k.ReconcileOnce(ctx, minAge)
		if err != nil {
			k.cfg.Logger.Warn("idempotency: reconcile pass failed", "err", err)
			continue
		}
		if rep.Asked > 0 || rep.Lapsed > 0 {
			k.cfg.Logger.Info("idempotency: reconciled", "lapsed", rep.Lapsed, "asked", rep.Asked,
				"happened", rep.Happened, "notHappened", rep.NotHappened, "unknown", rep.Unknown)
		}
	}
}
