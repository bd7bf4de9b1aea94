package executor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replayctl/replayctl/ledger"
)

// blockedPoll is how often a publisher held back by a pause or the in-flight bound looks again.
const blockedPoll = 20 * time.Millisecond

// pacer spaces publishes to a rate. It keeps up to a second of debt, so timer overshoot does not
// lower the average rate, but a pause does not turn into a burst afterwards.
type pacer struct {
	interval time.Duration
	next     time.Time
}

func newPacer(rate float64) *pacer {
	if rate <= 0 {
		return &pacer{}
	}
	return &pacer{interval: time.Duration(float64(time.Second) / rate)}
}

// setRate changes the rate from the next publish on; 0 removes the limit.
func (p *pacer) setRate(rate float64) {
	interval := time.Duration(0)
	if rate > 0 {
		interval = time.Duration(float64(time.Second) / rate)
	}
	if interval != p.interval {
		p.interval, p.next = interval, time.Now()
	}
}

// wait keeps the rate, calling beforeWait before it sleeps.
func (p *pacer) wait(ctx context.Context, beforeWait func()) error {
	if p.interval == 0 {
		return nil
	}
	now := time.Now()
	if p.next.Before(now.Add(-time.Second)) {
		p.next = now
	}
	d := p.next.Sub(now)
	p.next = p.next.Add(p.interval)
	if d <= 0 {
		return nil
	}
	beforeWait()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runState is what the watcher tells the publisher: whether to stop, whether the job is paused,
// and the ledger figures that bound what may be in flight.
type runState struct {
	// sent counts this run's publishes; acked and deduplicated their acknowledgements.
	sent, acked, deduplicated atomic.Int64
	// Of the publishes that failed and were retried: landedUnacked were found in the ledger and
	// not sent again, republished were sent again and acknowledged.
	landedUnacked, republished atomic.Int64

	mu          sync.Mutex
	stop        bool
	pauseReason string
	// publishedBefore is how many targets were published before this run; settled how many
	// of all published have an outcome (as of the last poll).
	publishedBefore int64
	settled         int64
	durable         string
	durablePending  int64
	// maxInFlight and rate are the job's pace, changed by `replayctl pace` while the run goes.
	maxInFlight int64
	rate        float64
	canary      canary
	budget      budgetWindow
	// drained says every target was published; wake asks the watcher to poll now (window.go).
	drained atomic.Bool
	wake    chan struct{}
	// drainRecounts and drainTargetReads count the ledger reads after the last publish
	// (Result.DrainReads).
	drainRecounts, drainTargetReads atomic.Int64
}

// inFlight is how many published targets have no outcome yet, as of the last poll.
func (st *runState) inFlight() int64 {
	return st.publishedBefore + st.sent.Load() - st.settled
}

// blockedBy says why the publisher must wait ("" when it may go on); st.mu is held.
func (st *runState) blockedBy() string {
	switch {
	case st.pauseReason != "":
		return st.pauseReason
	case st.canary.holds(st.sent.Load()) != "":
		return st.canary.holds(st.sent.Load())
	case st.inFlight() >= st.maxInFlight:
		return fmt.Sprintf("throttled: %d published targets have no outcome in the ledger yet (--max-in-flight %d); is the consumer running?",
			st.inFlight(), st.maxInFlight)
	case st.budget.holds(st.inFlight()) != "":
		return st.budget.holds(st.inFlight())
	case st.durablePending >= st.maxInFlight:
		return fmt.Sprintf("throttled: durable consumer %s has %d messages pending (--max-in-flight %d)", st.durable, st.durablePending, st.maxInFlight)
	}
	return ""
}

// waitTurn blocks while the run is paused or throttled, then keeps the rate, calling beforeWait
// before it blocks. It returns false when the run is stopping.
func (st *runState) waitTurn(ctx context.Context, pace *pacer, beforeWait func()) (bool, error) {
	for {
		st.mu.Lock()
		stop, blocked, rate := st.stop, st.blockedBy(), st.rate
		st.mu.Unlock()
		pace.setRate(rate)
		if stop {
			return false, nil
		}
		if blocked == "" {
			break
		}
		beforeWait()
		select {
		case <-time.After(blockedPoll):
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	if err := pace.wait(ctx, beforeWait); err != nil {
		return false, err
	}
	return true, nil
}

func (st *runState) requestStop() {
	st.mu.Lock()
	st.stop = true
	st.mu.Unlock()
}

// takePace applies the pace stored with the job, read by the poll, and says what changed ("" when
// nothing did); st.mu is held.
func (st *runState) takePace(p ledger.JobPace) string {
	var changes []string
	if p.Rate != nil && *p.Rate != st.rate {
		changes = append(changes, fmt.Sprintf("--rate %s -> %s", rateText(st.rate), rateText(*p.Rate)))
		st.rate = *p.Rate
	}
	if p.MaxInFlight != nil && int64(*p.MaxInFlight) != st.maxInFlight {
		changes = append(changes, fmt.Sprintf("--max-in-flight %d -> %d", st.maxInFlight, *p.MaxInFlight))
		st.maxInFlight = int64(*p.MaxInFlight)
	}
	if len(changes) == 0 {
		return ""
	}
	return "pace changed (replayctl pace): " + strings.Join(changes, ", ")
}

// rateText writes a publish rate as a person reads it: 0 is no limit.
func rateText(rate float64) string {
	if rate == 0 {
		return "0 (no limit)"
	}
	return strconv.FormatFloat(rate, 'f', -1, 64) + "/s"
}

// useStoredPace takes the job's stored pace for the options the operator did not name.
func (s *session) useStoredPace(p ledger.JobPace) {
	if s.opts.RateUnset && p.Rate != nil {
		s.opts.Rate = *p.Rate
	}
	if s.opts.MaxInFlightUnset && p.MaxInFlight != nil {
		s.opts.MaxInFlight = *p.MaxInFlight
	}
}
