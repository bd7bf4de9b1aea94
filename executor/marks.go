package executor

import (
	"context"
	"sync"
)

const (
	// maxMarkBatch bounds one published-marks statement. Below it a batch is whatever was
	// acknowledged while the writers were busy, so the ledger trails the acknowledgements by about
	// one statement: fixed batches (2,000, or every 500 ms) queued behind a slow ledger, and the
	// run's last acknowledgement then waited for all of them (310 ms in one measured run).
	maxMarkBatch = 8000
	// minMarkBatch is the least a statement waits for while acknowledgements keep coming
	// (retryTick bounds the wait): handed over whenever a writer was idle, most statements
	// committed a few dozen rows.
	minMarkBatch = 500
	// markWriters is how many statements may be in flight: with one, the run's last batch waited
	// for a large one before it, as long as the large one took.
	markWriters = 2
)

// marker records acknowledged targets as published in goroutines of its own, so waiting for the
// ledger never holds up the acknowledgements behind it. The first failed write stops the marking
// and is returned by the next hand-off or by finish.
type marker struct {
	batches chan []string
	failed  chan struct{}
	fail    sync.Once
	err     error
	writers sync.WaitGroup
	closed  bool
}

func (s *session) startMarking(ctx context.Context) *marker {
	// Unbuffered: a batch is taken only by a writer waiting for one, so an offer finds out whether
	// one is idle.
	m := &marker{batches: make(chan []string), failed: make(chan struct{})}
	for range markWriters {
		m.writers.Go(func() {
			for batch := range m.batches {
				wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
				_, err := s.store.JobTargetsMarkPublished(wctx, s.job.ID, batch, s.opts.Now().UTC())
				cancel()
				if err != nil {
					m.fail.Do(func() { m.err = err; close(m.failed) })
					return
				}
			}
		})
	}
	return m
}

// offer hands batch to an idle writer, or waits for one when wait is set. taken says whether a
// writer has the batch; the caller starts a new one then.
func (m *marker) offer(batch []string, wait bool) (taken bool, err error) {
	if wait {
		select {
		case m.batches <- batch:
			return true, nil
		case <-m.failed:
			return false, m.err
		}
	}
	select {
	case m.batches <- batch:
		return true, nil
	case <-m.failed:
		return false, m.err
	default:
		return false, nil
	}
}

// finish records the last batch and waits until every batch is recorded.
func (m *marker) finish(batch []string) error {
	var err error
	if len(batch) > 0 {
		_, err = m.offer(batch, true)
	}
	if !m.closed {
		m.closed = true
		close(m.batches)
		m.writers.Wait()
	}
	select {
	case <-m.failed:
		return m.err
	default:
		return err
	}
}
