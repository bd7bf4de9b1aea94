package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

const (
	// pollFailureLimit is how long the ledger may fail to answer polls before the run stops;
	// shorter outages (a failover) are ridden out.
	pollFailureLimit = 30 * time.Second
	// rateWindow is how many polls the settled rate is averaged over.
	rateWindow = 10
)

// sample is one poll's settled count, for the rate.
type sample struct {
	at      time.Time
	settled int64
}

// run publishes and watches until every target settled, a guard or a cancel stops the run
// (returned as a Stop), or ctx ends or something breaks (returned as an error).
func (s *session) run(ctx context.Context, r *Result) (*Stop, error) {
	pub, err := jetstream.New(s.js.Conn(), jetstream.WithPublishAsyncMaxPending(min(s.opts.MaxInFlight, 4096)),
		jetstream.WithPublishAsyncTimeout(publishAckTimeout))
	if err != nil {
		return nil, fmt.Errorf("open JetStream for publishing: %w", err)
	}
	// Plan leaves its targets' statistics to the steps that page them; shadow refreshed them, but
	// its own outcomes changed the rows since, and the analyze is cheap.
	_ = s.store.JobTargetsAnalyze(ctx)
	// Only what an earlier run published that reached the consumer is in flight before this run:
	// a target published without a row is published again, and counted in this run's sent.
	// Counting it twice held a rerun at 0 published under --max-in-flight (issue 33).
	publishedBefore, err := s.store.JobTargetsPublishedWithRows(ctx, s.job.ID, s.job.Consumer, s.job.EffectVersionTo)
	if err != nil {
		return nil, err
	}
	st := &runState{publishedBefore: publishedBefore, maxInFlight: int64(s.opts.MaxInFlight), rate: s.opts.Rate, durable: s.opts.Durable,
		canary: canary{size: r.Preflight.Canary, open: r.Preflight.Canary == 0},
		budget: budgetWindow{budget: s.budget.Budget, maxPerTarget: s.budget.MaxPerTarget}, wake: make(chan struct{}, 1)}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	acks := make(chan []pendingAck, max(1, min(s.opts.MaxInFlight, 4096)/handChunk))
	published := make(chan error, 1)
	acked := make(chan error, 1)
	r.PublishStartedAt = s.opts.Now().UTC()
	go func() {
		err := s.publishTargets(runCtx, st, pub, acks)
		st.drained.Store(err == nil)
		published <- err
	}()
	// Stamped where the last acknowledgement is recorded, not where the loop below hears of it:
	// the loop may be in a poll then, which takes up to a tenth of a second on a busy ledger.
	var ackedAt time.Time
	go func() {
		err := s.collectAcks(runCtx, pub, acks, st)
		ackedAt = s.opts.Now().UTC()
		acked <- err
	}()
	s.opts.stage("publishing %d targets of job %s under effect version %d", r.Preflight.ToPublish, s.job.ID, s.job.EffectVersionTo)

	w := &watcher{s: s, st: st, r: r, lastChange: time.Now()}
	go (&window{s: s, st: st, durableFound: r.Preflight.DurableFound}).watch(runCtx)
	publishing, acking := true, true
	// publishedAll and ackedAll: each side ended without an error. Both channels may be ready at
	// once and the select takes either first, so the finish is stamped once both are known.
	var publishedAll, ackedAll bool
	var loopErr error
	var stop *Stop
	// The next poll waits at least twice as long as the last one took, so the progress queries
	// of a million-target job never take more than a third of the database's time.
	timer := time.NewTimer(s.opts.PollInterval)
	defer timer.Stop()
	for {
		select {
		case err := <-published:
			publishing, publishedAll = false, err == nil
			if err != nil && !errors.Is(err, context.Canceled) {
				loopErr = err
			}
		case err := <-acked:
			acking, ackedAll = false, err == nil
			if err != nil && !errors.Is(err, context.Canceled) {
				loopErr = err
			}
		case <-timer.C:
		case <-st.wake:
		case <-ctx.Done():
			loopErr = ctx.Err()
		}
		// The acks end after the publisher: nil from both means every target was published.
		if publishedAll && ackedAll && r.PublishFinishedAt.IsZero() {
			r.PublishFinishedAt = ackedAt
		}
		if loopErr != nil {
			break
		}
		var done bool
		began := time.Now()
		stop, done, loopErr = w.poll(ctx, publishing || acking)
		if loopErr != nil || stop != nil || done {
			break
		}
		timer.Reset(max(s.opts.PollInterval, 2*time.Since(began)))
	}
	// Let the publisher stop at its next turn and every acknowledged publish be recorded.
	st.requestStop()
	if loopErr != nil {
		cancel()
	}
	if publishing {
		<-published
	}
	if acking {
		if err := <-acked; err != nil && loopErr == nil && !errors.Is(err, context.Canceled) {
			loopErr = err
		}
	}
	r.Published, r.Deduplicated = st.acked.Load(), st.deduplicated.Load()
	r.LandedUnacknowledged, r.Republished = st.landedUnacked.Load(), st.republished.Load()
	r.DrainReads = DrainReads{SettledRecounts: st.drainRecounts.Load(), TargetStatusReads: st.drainTargetReads.Load()}
	w.writeRunState(ctx, "stopped", "")
	return stop, loopErr
}

// watcher polls the ledger: progress, pause and cancel, the guards, the end.
type watcher struct {
	s       *session
	st      *runState
	r       *Result
	samples []sample
	// lastSettled and lastChange are the stall clock (stall.go).
	lastSettled int64
	lastChange  time.Time
	// stallNoticed says the stall under way was reported (Options.Notice).
	stallNoticed bool
	leases       leaseWatch
	failingFor   time.Time
	durable      jetstream.Consumer
	// drainTargets are the job's target statuses, read once the publisher and the acknowledgement
	// collector have ended (readProgress).
	drainTargets map[string]int64
	// drainDeadLettered is the last poll's count of replays dead-lettered again.
	drainDeadLettered int64
}

// readProgress reads the job's target statuses and its ledger rows. The publisher and the
// acknowledgement collector write target statuses during a run (skipped, source failures,
// published), and both have stored everything they will once they have ended, so from then on
// the statuses are read once and kept: each poll of the drain counts the ledger rows alone,
// where it counted every target of the job again too (a third of each poll's database time).
// The one other writer, a consumer failing the target of a replay it dead-lettered again, shows
// in the rows' counts (DeadLettered), and the statuses are read again then.
func (w *watcher) readProgress(ctx context.Context, rec ledger.Job, publishing bool) (Progress, ledger.JobEffectCounts, error) {
	e, err := w.s.store.EffectsJobCounts(ctx, rec.Consumer, rec.EffectVersionTo, rec.ID)
	if err != nil {
		return Progress{}, ledger.JobEffectCounts{}, err
	}
	ts := w.drainTargets
	changed := e.DeadLettered != w.drainDeadLettered
	w.drainDeadLettered = e.DeadLettered
	if publishing || ts == nil || changed {
		var err error
		if ts, err = w.s.store.JobTargetsCount(ctx, rec.ID); err != nil {
			return Progress{}, ledger.JobEffectCounts{}, err
		}
		if w.st.drained.Load() {
			w.st.drainTargetReads.Add(1)
		}
		if !publishing {
			w.drainTargets = ts
		}
	}
	return job.ProgressOfJob(rec, ts, e), e, nil
}

// poll reads the ledger once. done means every target settled.
func (w *watcher) poll(ctx context.Context, publishing bool) (*Stop, bool, error) {
	s := w.s
	rec, err := s.store.JobsGet(ctx, s.job.ID)
	var p Progress
	var e ledger.JobEffectCounts
	if err == nil {
		p, e, err = w.readProgress(ctx, rec, publishing)
	}
	var retryingThisRun int64
	if err == nil && e.Retrying >= minRetryingSample {
		retryingThisRun, err = s.store.EffectsJobRetryingSince(ctx, rec.Consumer, rec.EffectVersionTo, rec.ID, w.r.StartedAt)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		if w.failingFor.IsZero() {
			w.failingFor = time.Now()
		}
		if time.Since(w.failingFor) > pollFailureLimit {
			return nil, false, fmt.Errorf("reading the progress of job %s failed for %s: %w; the job stays executing: run execute again to continue", s.job.ID, pollFailureLimit, err)
		}
		return nil, false, nil
	}
	w.failingFor = time.Time{}
	p.CallBudget = s.callBudget()
	w.readDurable(ctx)

	w.st.mu.Lock()
	paced := w.st.takePace(rec.Pace)
	w.st.settled = e.Settled()
	w.st.budget.settled, w.st.budget.settledCalls, w.st.budget.inFlightCalls = e.Settled(), e.SettledCalls, e.InFlightCalls
	// A cancelled job stops the publisher here, under the lock that releases a pause: a paused
	// run must not publish one more target on its way out.
	if rec.Status == jobtype.Cancelled {
		w.st.stop = true
	}
	w.st.pauseReason = ""
	if rec.Status == jobtype.Paused {
		w.st.pauseReason = "paused" + statusBecause(rec) + "; `replayctl resume " + rec.ID + "` continues"
	}
	blocked := w.st.blockedBy()
	inCanary := !w.st.canary.open
	canaryOver := w.st.canary.settled(w.st.sent.Load(), w.st.inFlight(), publishing)
	// The budget holds the next target back and nothing is in flight to settle: it never opens.
	exhausted := w.st.inFlight() <= 0 && w.st.budget.holds(0) != ""
	w.st.mu.Unlock()

	if paced != "" {
		s.opts.stage("%s", paced)
	}
	w.rate(&p, e.Settled())
	switch {
	case blocked != "" && inCanary:
		p.State, p.Reason = stateOf(rec.Status, "canary"), blocked
	case blocked != "":
		p.State, p.Reason = stateOf(rec.Status, "throttled"), blocked
	case publishing:
		p.State = "publishing"
	default:
		p.State = "waiting"
	}
	w.r.Final = p
	if s.opts.Progress != nil {
		s.opts.Progress(p)
	}
	w.writeRunState(ctx, p.State, p.Reason)

	if rec.Status == jobtype.Cancelled {
		return &Stop{Kind: StopCancelled, By: rec.StatusBy, Message: fmt.Sprintf(
			"job %s was cancelled%s; publishing stopped, and what was already replayed stays replayed (cancel never reverts)", rec.ID, statusBecause(rec))}, false, nil
	}
	finished := !publishing && p.Remaining == 0
	if finished && w.r.SettledAt.IsZero() {
		w.r.SettledAt = s.opts.Now().UTC()
	}
	finding := judgeGuards(guardInput{Guards: s.opts.Guards, Budget: s.budget, PlannedTargets: s.m.Stats.Targets, Progress: p, Effects: e,
		RetryingThisRun: retryingThisRun, Finished: finished, CanaryOver: canaryOver, Exhausted: exhausted && p.Remaining > 0})
	if stop := guardStop(s.m.ID, p.Remaining, finding); stop != nil {
		if inCanary && !stop.Completed {
			stop.Canary = true
			stop.Message = fmt.Sprintf("the canary of %d targets stopped the run before the rest was published: %s", w.st.canary.size, stop.Message)
		}
		return stop, finished, nil
	}
	if canaryOver {
		w.openCanary(ctx, p)
	}
	if finished {
		w.endStall("outcomes land again", e.Settled())
		w.leasesFreed("every target settled")
		return nil, true, nil
	}
	w.watchLeases(ctx, e)
	if stop := w.stalled(ctx, rec, p, e); stop != nil {
		return stop, false, nil
	}
	return nil, false, nil
}

func stateOf(jobStatus jobtype.Status, otherwise string) string {
	if jobStatus == jobtype.Paused {
		return string(jobtype.Paused)
	}
	return otherwise
}

// rate fills p's rate and ETA from the settled counts of the last polls.
func (w *watcher) rate(p *Progress, settled int64) {
	now := time.Now()
	w.samples = append(w.samples, sample{at: now, settled: settled})
	if len(w.samples) > rateWindow {
		w.samples = w.samples[1:]
	}
	first := w.samples[0]
	if elapsed := now.Sub(first.at).Seconds(); elapsed > 0 {
		p.Rate = float64(settled-first.settled) / elapsed
	}
	if p.Rate > 0 {
		p.ETA = time.Duration(float64(p.Remaining) / p.Rate * float64(time.Second)).Round(time.Second)
	}
}

// readDurable reads the durable consumer's pending count; a durable that cannot be read does not
// throttle, the ledger's in-flight count still does.
func (w *watcher) readDurable(ctx context.Context) {
	w.s.readDurable(ctx, w.r.Preflight.DurableFound, &w.durable, w.st)
}

// readDurable stores the durable's pending count in st, opening *c the first time; the poll and
// the window watcher each keep their own handle.
func (s *session) readDurable(ctx context.Context, found bool, c *jetstream.Consumer, st *runState) {
	backlog, ok := s.durableBacklog(ctx, found, c)
	if !ok {
		return
	}
	st.mu.Lock()
	st.durablePending = backlog
	st.mu.Unlock()
}

// durableBacklog reads the durable's messages not yet delivered plus those delivered and not yet
// acknowledged; ok is false when it could not be read (no durable, no answer).
func (s *session) durableBacklog(ctx context.Context, found bool, c *jetstream.Consumer) (backlog int64, ok bool) {
	if !found || s.stream == "" {
		return 0, false
	}
	// Bounded: a JetStream request whose answer is lost with a server (a kill, a leader change)
	// would otherwise hold the poll, and with it the stall clock, until ctx ends.
	ctx, cancel := context.WithTimeout(ctx, durableInfoTimeout)
	defer cancel()
	if *c == nil {
		d, err := s.js.Consumer(ctx, s.stream, s.opts.Durable)
		if err != nil {
			return 0, false
		}
		*c = d
	}
	info, err := (*c).Info(ctx)
	if err != nil {
		return 0, false
	}
	return int64(info.NumPending) + int64(info.NumAckPending), true
}

// RunState is an executor's live state as it stores it on the job for `replayctl status`.
type RunState struct {
	Owner     string        `json:"owner"`
	Actor     string        `json:"actor"`
	State     string        `json:"state"`
	Reason    string        `json:"reason,omitempty"`
	Published int64         `json:"published"`
	Rate      float64       `json:"ratePerSecond"`
	ETA       time.Duration `json:"-"`
	StartedAt time.Time     `json:"startedAt"`
	// Budget is the run's call budget, which status shows beside the calls made.
	Budget CallBudget `json:"callBudgetSource"`
	// Durable is where the run's replays land and the durable it throttles on, for status to read
	// the durable's counts.
	Durable *Durable `json:"durable,omitempty"`
	// Guards are the run's guards, for status --watch to show against the counts.
	Guards *Guards `json:"guards,omitempty"`
	// At is when the state was stored, by the ledger's clock (run_state_at).
	At time.Time `json:"at"`
}

func (w *watcher) writeRunState(ctx context.Context, state, reason string) {
	s := w.s
	body, err := json.Marshal(RunState{Owner: s.opts.Owner, Actor: s.opts.Actor, State: state, Reason: reason,
		Published: w.st.acked.Load(), Rate: w.r.Final.Rate, ETA: w.r.Final.ETA, StartedAt: w.r.StartedAt, Budget: s.budget,
		Durable: &Durable{Stream: s.stream, Name: s.opts.Durable}, Guards: &s.opts.Guards})
	if err != nil {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	// The run state is a display aid; a failed write must not stop a replay.
	_ = s.store.JobsSetRunState(wctx, s.job.ID, body)
}
