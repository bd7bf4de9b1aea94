package shadow

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

// pageSize is how many targets the full pass reads, looks up originals for and writes outcomes of
// per round trip; with the consumer batch of the same size it bounds the pass's memory.
const pageSize = 1000

// writeTimeout bounds one outcome write; writes outlive a cancelled run so that every outcome
// computed before the cancel is kept.
const writeTimeout = 10 * time.Second

// workItem is one target on its way from the feeder to a worker.
type workItem struct {
	target   ledger.ShadowTarget
	payload  []byte
	missing  string
	original *ledger.Original
	// done is the sample's result for a sampled target, which is not asked again.
	done *targetResult
}

// runner shadows one job: its sample, then the full pass over every target.
type runner struct {
	store Ledger
	js    jetstream.JetStream
	m     *manifest.Manifest
	opts  *Options
	req   *requester
	cmp   *comparer
	// sampled holds the sample's results by event ID; counted marks those the totals hold.
	sampled  map[string]*targetResult
	counted  map[string]bool
	totals   *Totals
	progress int64
	// sealedNotOpened counts the full pass's originals left sealed (Totals.SealedNotOpened).
	sealedNotOpened int64
}

// unansweredLimit is how many requests in a row may go unanswered before the pass stops.
func unansweredLimit(concurrency int) int { return max(200, 10*concurrency) }

// fullPass shadows every target. It returns ctx's error when ctx ends; an abort is recorded in
// totals, not returned. Outcomes are stored as they complete, one page per statement.
func (sh *runner) fullPass(ctx context.Context) error {
	// passCtx stops the feeder and the workers on an abort or a failed write as well as with ctx.
	passCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(passCtx)
	work := make(chan workItem, sh.opts.Concurrency)
	results := make(chan targetResult, sh.opts.Concurrency)
	g.Go(func() error { return sh.feed(gctx, work) })
	for range sh.opts.Concurrency {
		g.Go(func() error { return sh.work(gctx, work, results) })
	}
	var groupErr error
	go func() {
		groupErr = g.Wait()
		close(results)
	}()

	limit := unansweredLimit(sh.opts.Concurrency)
	var batch []ledger.ShadowOutcome
	var writeErr error
	flush := func() {
		if writeErr == nil && len(batch) > 0 {
			wctx, done := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
			writeErr = sh.store.JobTargetsRecordShadow(wctx, sh.m.ID, batch)
			done()
			if writeErr != nil {
				cancel()
			}
		}
		batch = batch[:0]
	}
	// run counts the pass's own requests in a row that went unanswered; reused sample results and
	// missing messages are not requests and leave it as it is.
	run := 0
	for r := range results {
		sh.count(&r)
		switch {
		case !r.asked:
		case r.unanswered():
			run++
		default:
			run = 0
		}
		if run > limit && !sh.totals.Aborted {
			sh.totals.Aborted = true
			sh.totals.AbortReason = fmt.Sprintf("the full pass stopped after %d requests in a row went unanswered (timeout or no responder) on %s: "+
				"check that the consumer's shadow responder is running and keeping up with --concurrency %d and --timeout %s, then run shadow again",
				run, sh.req.subject, sh.opts.Concurrency, sh.opts.Timeout)
			cancel()
		}
		batch = append(batch, r.outcome)
		if len(batch) >= pageSize {
			flush()
		}
	}
	flush()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case writeErr != nil:
		return writeErr
	default:
		return groupErr
	}
}

// count adds one target's result to the totals and reports progress.
func (sh *runner) count(r *targetResult) {
	t := sh.totals
	o := r.outcome
	if _, ok := sh.sampled[o.EventID]; ok {
		sh.counted[o.EventID] = true
	}
	switch o.Status {
	case statusOK:
		t.Answered++
		switch o.Comparison {
		case comparisonIdentical:
			t.Identical++
		case comparisonChanged:
			t.Changed++
		case comparisonNoOriginal:
			t.NoOriginal++
		case comparisonFailed:
			t.Failed++
		case comparisonFailedAgain:
			t.Failed++
			t.FailedAgain++
		}
		if o.ComparedOn == comparedOnHash {
			t.ComparedOnHash++
		}
		if r.effectsChanged {
			t.EffectCountChanged++
		}
	case statusError:
		t.Answered++
		t.ShadowErrors++
	case statusTimeout:
		t.Timeouts++
	case statusNoResponder:
		t.NoResponder++
	case statusSourceMissing:
		t.SourceMissing++
	case statusRefused:
		t.Refused++
	}
	for _, e := range r.effects {
		t.ShadowExternalCalls++
		t.EffectKinds[e.Kind]++
	}
	t.MaxCallsPerTarget = max(t.MaxCallsPerTarget, int64(len(r.effects)))
	sh.progress++
	if sh.opts.Progress != nil {
		sh.opts.Progress(sh.progress, t.Targets)
	}
}

// feed pages the targets by stream sequence, loads each page's originals in one query and merges
// the page with the DLQ stream read forward.
func (sh *runner) feed(ctx context.Context, work chan<- workItem) error {
	defer close(work)
	var source *dlq.Reader
	defer func() {
		if source != nil {
			source.Close()
		}
	}()
	var after uint64
	for {
		page, err := sh.store.JobTargetsPageBySeq(ctx, sh.m.ID, after, pageSize)
		if err != nil || len(page) == 0 {
			return ignoreCancel(ctx, err)
		}
		after = page[len(page)-1].StreamSeq
		if source == nil {
			if source, err = dlq.Open(ctx, sh.js, sh.m, page[0].StreamSeq, pageSize); err != nil {
				return ignoreCancel(ctx, err)
			}
		}
		ids := make([]string, len(page))
		for i, t := range page {
			ids[i] = t.EventID
		}
		originals, closed, err := sh.originals(ctx, ids)
		sh.sealedNotOpened += closed
		if err != nil {
			return ignoreCancel(ctx, err)
		}
		for _, t := range page {
			item := workItem{target: t, done: sh.sampled[t.EventID]}
			// A sampled target's message is still read, to keep the merge with the stream in step.
			msg, missing, err := source.Next(sourceTarget(t))
			if err != nil {
				return ignoreCancel(ctx, err)
			}
			item.payload, item.missing = msg.Data, missing
			if o, ok := originals[t.EventID]; ok {
				item.original = &o
			}
			select {
			case work <- item:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// work shadows items until the feeder is done or the pass stops.
func (sh *runner) work(ctx context.Context, work <-chan workItem, results chan<- targetResult) error {
	for item := range work {
		if ctx.Err() != nil {
			return nil
		}
		if item.done != nil {
			results <- *item.done
			continue
		}
		var a *answer
		if item.missing == "" {
			var err error
			if a, err = sh.req.ask(ctx, item.target.EventID, sh.m.EffectVersion.To, item.payload); err != nil {
				return ignoreCancel(ctx, err)
			}
		}
		res := sh.cmp.judge(item.target, item.missing, a, item.original, sh.opts.Now())
		res.asked = a != nil
		results <- res
	}
	return nil
}

// storeUncountedSample counts and stores the sample's results the full pass did not reach: all of
// them when it did not run, those beyond the point where it stopped when it was aborted.
func (sh *runner) storeUncountedSample(ctx context.Context) error {
	var outcomes []ledger.ShadowOutcome
	for id, res := range sh.sampled {
		if !sh.counted[id] {
			sh.count(res)
			outcomes = append(outcomes, res.outcome)
		}
	}
	return sh.store.JobTargetsRecordShadow(ctx, sh.m.ID, outcomes)
}

// ignoreCancel drops the error of a goroutine stopped by the pass's own cancellation: the cause
// (ctx ended, abort, failed write) is reported once, by run.
func ignoreCancel(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func sourceTarget(t ledger.ShadowTarget) dlq.Planned {
	return dlq.Planned{EventID: t.EventID, StreamSeq: t.StreamSeq, PayloadHash: t.PayloadHash}
}
