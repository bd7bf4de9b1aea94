package executor

import (
	"context"
	"fmt"
)

// A run starts with a canary: it publishes the first targets only, waits until every one of them
// settled, and judges every guard on them (however few, unlike the prorated guards' minimum
// sample) before it opens the rate and the in-flight window. Without it a fast publisher puts a
// whole job on the stream before the first poll, and a guard can only report the damage.

const (
	// NoCanary (--canary 0) opens the rate and window at once.
	NoCanary = -1
	// canaryShare, minCanary and maxCanary size the default canary: 1% of the targets, at least
	// 10, at most 500.
	canaryShare = 0.01
	minCanary   = 10
	maxCanary   = 500
)

// canarySize is how many targets the run publishes before it opens: opts.Canary, or the default
// share of the job's targets, never more than the run publishes.
func canarySize(option int, targets, toPublish int64) int64 {
	var n int64
	switch {
	case option == NoCanary:
		return 0
	case option > 0:
		n = int64(option)
	default:
		n = min(max(int64(float64(targets)*canaryShare+0.999999), minCanary), maxCanary)
	}
	return min(n, toPublish)
}

// canary is the run's canary as the publisher and the watcher share it; runState.mu guards it.
type canary struct {
	size int64
	// open says the canary settled and passed every guard: the rate and window are open.
	open bool
}

// holds says whether the canary keeps the publisher waiting, having published sent targets.
func (c *canary) holds(sent int64) string {
	if c.open || sent < c.size {
		return ""
	}
	return fmt.Sprintf("canary: the first %d targets are published; the rest waits until they settle and pass every guard", c.size)
}

// settled reports whether the canary is over: all its targets (or every target, for a job
// smaller than the canary) published and none in flight.
func (c *canary) settled(sent, inFlight int64, publishing bool) bool {
	return !c.open && (sent >= c.size || !publishing) && inFlight <= 0
}

// openCanary opens the rate and window once the canary passed, and records that it did.
func (w *watcher) openCanary(ctx context.Context, p Progress) {
	w.st.mu.Lock()
	w.st.canary.open = true
	w.st.mu.Unlock()
	w.r.CanaryPassedAt = w.s.opts.Now().UTC()
	w.s.opts.stage("the canary of %d targets settled and passed every guard (%d completed, %d failed, %d uncertain, %d external calls); opening the rate and window",
		w.st.canary.size, p.Completed, p.Failed, p.Uncertain, p.ExternalCalls)
	w.s.audit(ctx, "execute.canary_passed", map[string]any{"canary": w.st.canary.size, "progress": p})
}
