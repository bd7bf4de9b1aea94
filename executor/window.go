package executor

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The in-flight window opens as outcomes land, not once per poll. Refreshed by the poll alone,
// a full window waited for the next poll however fast the consumers settled it, which capped a
// fleet at about --max-in-flight targets per poll interval. Between polls, while the run waits
// on outcomes (throttled by the window, holding for the canary, or everything published), the
// window watcher re-counts the job's settled ledger rows (ledger.EffectsJobSettled); the ledger
// count stays the only figure the window trusts. docs/decisions.md says why this and not
// LISTEN/NOTIFY or a JetStream subscription.

// windowRecountMin is the shortest gap between two re-counts; each waits at least twice as long
// as the last one took, so a large job's re-counts take at most a third of a backend.
const windowRecountMin = 25 * time.Millisecond

// windowDrainedMin is the shortest gap between re-counts once every target is published; each
// then waits at least four times as long as the last one took (a fifth of a backend at most).
const windowDrainedMin = 100 * time.Millisecond

// windowIdleMax is the longest gap between re-counts that keep finding nothing new.
const windowIdleMax = time.Second

// Once every target is published, or the canary is and the rest waits for it, the durable tells
// when a ledger re-count can find them settled: the consumers acknowledge a message only after
// its outcome is in the ledger, so while the durable still has messages pending or
// unacknowledged, a count cannot reach the end. The watcher asks the durable (a JetStream
// request, no database work) every windowRecountMin and counts the ledger when the durable is
// empty, or at the latest after drainedCountMax or ten times the last count's duration
// (since the start of the watch, before the first count), whichever is longer: the durable is
// shared with live traffic, which may never leave it empty, and a consumer outside the SDK may
// acknowledge early. Counting on the 4x rule alone took PostgreSQL time from the consumers still
// settling thousands of targets (docs/decisions.md, "A fleet's in-flight window").
const drainedCountMax = time.Second

// recountKind is what the window waits on.
type recountKind int

const (
	recountNone recountKind = iota
	// recountLedger: published targets without an outcome hold the publisher, or the run.
	recountLedger
	// recountDurable: only the durable's pending count holds the publisher.
	recountDurable
)

// waitsOn says which figure to read again; st.mu is held.
func (st *runState) waitsOn() recountKind {
	if st.stop || st.pauseReason != "" {
		return recountNone
	}
	inFlight := st.inFlight()
	switch {
	case inFlight <= 0:
		return recountNone
	case inFlight >= st.maxInFlight, st.awaitsOutcomesOnly():
		return recountLedger
	case st.durablePending >= st.maxInFlight:
		return recountDurable
	}
	return recountNone
}

// awaitsOutcomesOnly says nothing more is published until outcomes land: every target is out, or
// the canary is and the rest waits for it; st.mu is held.
func (st *runState) awaitsOutcomesOnly() bool {
	return st.drained.Load() || st.canary.holds(st.sent.Load()) != ""
}

// window re-reads the figures that hold the in-flight window, between polls.
type window struct {
	s            *session
	st           *runState
	durableFound bool
	durable      jetstream.Consumer
	// counted and countTook are when the last ledger re-count began and how long it took.
	counted   time.Time
	countTook time.Duration
	// backlogSeen says the durable's last answer held unacknowledged messages: a count taken
	// since then was taken by the clock, and the durable, not the idle clock, says when to count
	// next.
	backlogSeen bool
	// started is when the watch began.
	started time.Time
}

// countDeferred says whether a ledger re-count of a run that waits on outcomes alone (drained, or
// holding for its canary) can wait: the last one (or the start of the watch) is recent and the
// durable still holds messages the consumers have not acknowledged.
func (w *window) countDeferred(ctx context.Context, now time.Time) bool {
	last := w.counted
	if last.IsZero() {
		// Nothing counted yet: ask the durable from the start. A first count taken before
		// asking spaced the next question by four times its duration, and at the start of a
		// run, on a busy machine, that count took up to 0.6 s.
		last = w.started
	}
	if now.Sub(last) >= max(drainedCountMax, 10*w.countTook) {
		return false
	}
	backlog, ok := w.s.durableBacklog(ctx, w.durableFound, &w.durable)
	w.backlogSeen = ok && backlog > 0
	return w.backlogSeen
}

// watch re-counts what holds the window until ctx ends. When the last published target
// settles and nothing more is to be published now (all sent, or the canary), it wakes the poll,
// which finishes the run or opens the canary without waiting out its interval.
func (w *window) watch(ctx context.Context) {
	s, st := w.s, w.st
	w.started = time.Now()
	t := time.NewTimer(windowRecountMin)
	defer t.Stop()
	// idle grows while re-counts find nothing new (a fleet that is down, a slow consumer), so a
	// run throttled for minutes asks about once a second, and shrinks at the first outcome.
	idle, idleMax, last := windowRecountMin, min(s.opts.PollInterval, windowIdleMax), int64(-1)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st.mu.Lock()
		kind := st.waitsOn()
		outcomesOnly := st.awaitsOutcomesOnly()
		st.mu.Unlock()
		began := time.Now()
		switch kind {
		case recountLedger:
			if outcomesOnly && w.countDeferred(ctx, began) {
				t.Reset(windowRecountMin)
				continue
			}
			n, err := s.store.EffectsJobSettled(ctx, s.job.Consumer, s.job.EffectVersionTo, s.job.ID)
			w.counted, w.countTook = began, time.Since(began)
			if st.drained.Load() {
				st.drainRecounts.Add(1)
			}
			if err != nil {
				break
			}
			if n == last {
				idle = min(2*idle, idleMax)
			} else {
				idle, last = windowRecountMin, n
			}
			st.mu.Lock()
			st.settled = n
			woke := st.inFlight() <= 0 && st.awaitsOutcomesOnly()
			st.mu.Unlock()
			if woke {
				select {
				case st.wake <- struct{}{}:
				default:
				}
			}
		case recountDurable:
			s.readDurable(ctx, w.durableFound, &w.durable, st)
		}
		if kind == recountNone {
			idle = windowRecountMin
		}
		gap := max(idle, 2*time.Since(began))
		if kind == recountLedger && outcomesOnly {
			// Nothing more is published until outcomes land, and the durable says when a count
			// can find them: a count in between is PostgreSQL time taken from the consumers.
			if w.backlogSeen {
				// The clock forced this count while the durable still held messages: ask the
				// durable again at once, which costs the database nothing; countDeferred's
				// ten-times rule spaces the counts. Spaced by the idle gap or by four times a
				// slow count, the next question came up to two seconds after the last outcome.
				gap = windowRecountMin
			} else {
				gap = max(gap, windowDrainedMin, 4*time.Since(began))
			}
		}
		t.Reset(gap)
	}
}
