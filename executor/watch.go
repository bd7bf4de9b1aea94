package executor

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobtype"
)

const (
	// DefaultWatchInterval is status --watch's default --interval.
	DefaultWatchInterval = 2 * time.Second
	// watchReconnectEvery is how often a watch tries NATS again after it could not connect, so a
	// server that is down costs a connect attempt now and then, not one per report.
	watchReconnectEvery = 15 * time.Second
	// watchRateSamples is how many reports the watch's own rate is averaged over.
	watchRateSamples = 10
)

// WatchOptions are a status --watch request.
type WatchOptions struct {
	StatusOptions
	// Interval is the time between two reports; 0 means DefaultWatchInterval.
	Interval time.Duration
	// Report is given each report; an error it returns ends the watch with that error.
	Report func(*StatusReport) error
}

// Watch reports jobID's status every Interval until the job is final (that report is the last)
// or ctx ends, which is how an operator stops watching: nil, not an error. A report the ledger
// cannot give ends the watch with its error. The rate is the executor's while one is attached,
// else the watch's own over its last reports; no ETA is given while the job is paused.
func Watch(ctx context.Context, store Ledger, o WatchOptions) error {
	if o.Interval <= 0 {
		o.Interval = DefaultWatchInterval
	}
	nats := &heldJetStream{connect: o.JetStream}
	defer nats.close()
	if o.JetStream != nil {
		o.JetStream = nats.get
	}
	var samples []sample
	t := time.NewTicker(o.Interval)
	defer t.Stop()
	for {
		r, err := StatusOf(ctx, store, o.StatusOptions)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		samples = watchRate(r, samples, time.Now())
		if err := o.Report(r); err != nil {
			return err
		}
		if job.Final(r.Status) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// watchRate fills r's rate from the settled counts of the last reports when no executor reports
// one, and clears the ETA of a paused job: it has none until resumed.
func watchRate(r *StatusReport, samples []sample, now time.Time) []sample {
	c := &r.Counts
	samples = append(samples, sample{at: now, settled: c.Completed + c.Failed + c.Uncertain})
	if len(samples) > watchRateSamples {
		samples = samples[1:]
	}
	if c.Rate == 0 && len(samples) > 1 {
		first, last := samples[0], samples[len(samples)-1]
		if elapsed := last.at.Sub(first.at).Seconds(); elapsed > 0 {
			c.Rate = float64(last.settled-first.settled) / elapsed
		}
		if c.Rate > 0 {
			c.ETA = time.Duration(float64(c.Remaining) / c.Rate * float64(time.Second)).Round(time.Second)
		}
	}
	if r.Status == jobtype.Paused || c.State == string(jobtype.Paused) {
		c.ETA = 0
	}
	return samples
}

// heldJetStream keeps one NATS connection for a watch's reports, and after a failed connect waits
// watchReconnectEvery before trying again, returning the last failure meanwhile.
type heldJetStream struct {
	connect func(ctx context.Context) (jetstream.JetStream, func(), error)
	mu      sync.Mutex
	js      jetstream.JetStream
	closeJS func()
	err     error
	failed  time.Time
}

func (h *heldJetStream) get(ctx context.Context) (jetstream.JetStream, func(), error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	noop := func() {}
	if h.js != nil {
		return h.js, noop, nil
	}
	if h.err != nil && time.Since(h.failed) < watchReconnectEvery {
		return nil, nil, h.err
	}
	js, closeJS, err := h.connect(ctx)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, nil, err
		}
		h.err, h.failed = err, time.Now()
		return nil, nil, err
	}
	h.js, h.closeJS, h.err = js, closeJS, nil
	return js, noop, nil
}

func (h *heldJetStream) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closeJS != nil {
		h.closeJS()
	}
}
