package planner

import (
	"runtime"
	"sync"
)

// Inline, the scan was one goroutine taking turns at reading the ordered consumer, canonicalising
// each JSON payload and encoding its COPY row, and it ran at about half the raw scan's rate on a
// core of its own. scanPipe overlaps the three: the scanner reads and counts messages in its own
// goroutine, workers fingerprint batches of rows, and COPY takes the batches back in stream order,
// so the rows, and everything built from them, are the ones the inline scan produced.
const (
	// pipeBatchRows and pipeBatchBytes close a batch, whichever comes first: few enough channel
	// operations per message, and a bounded payload per batch however large the messages.
	pipeBatchRows  = 256
	pipeBatchBytes = 1 << 20
	// pipeInFlight batches at most sit between the scanner and COPY, so the pipe holds at most
	// about pipeInFlight × pipeBatchBytes of payload on top of the consumer's pull batch.
	pipeInFlight = 8
)

type pipeBatch struct {
	rows [][]any
	data [][]byte
	// done is closed once every row holds its fingerprints.
	done chan struct{}
}

// scanPipe is the pgx.CopyFromSource of a scan.
type scanPipe struct {
	s *scanner
	// ordered carries the batches in stream order to Next; work the same batches to the workers.
	ordered, work chan *pipeBatch
	quit          chan struct{}
	wg            sync.WaitGroup
	cur           *pipeBatch
	i             int
	// readErr is the scanner's error, written by the reader before it closes ordered; ended says
	// Next saw ordered closed, so reading readErr is safe. COPY calls Err between batches too.
	readErr error
	ended   bool
	// srcErr is the scan's error as COPY saw it; set by Err, read after COPY returned.
	srcErr error
}

func newScanPipe(s *scanner) *scanPipe {
	p := &scanPipe{
		s:       s,
		ordered: make(chan *pipeBatch, pipeInFlight),
		work:    make(chan *pipeBatch, pipeInFlight),
		quit:    make(chan struct{}),
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), 4))
	p.wg.Add(1 + workers)
	go p.read()
	for range workers {
		go p.fingerprint()
	}
	return p
}

// read runs the scanner; it alone touches the scanner until close returns.
func (p *scanPipe) read() {
	defer p.wg.Done()
	defer close(p.work)
	defer close(p.ordered)
	defer func() { p.readErr = p.s.err }()
	b, size := p.newBatch(), 0
	send := func() bool {
		select {
		case p.ordered <- b:
		case <-p.quit:
			return false
		}
		select {
		case p.work <- b:
		case <-p.quit:
			return false
		}
		b, size = p.newBatch(), 0
		return true
	}
	for p.s.Next() {
		b.rows, b.data = append(b.rows, p.s.row), append(b.data, p.s.data)
		size += len(p.s.data)
		p.s.data = nil
		if (len(b.rows) == pipeBatchRows || size >= pipeBatchBytes) && !send() {
			return
		}
	}
	if len(b.rows) > 0 {
		send()
	}
}

func (p *scanPipe) newBatch() *pipeBatch {
	return &pipeBatch{rows: make([][]any, 0, pipeBatchRows), data: make([][]byte, 0, pipeBatchRows), done: make(chan struct{})}
}

func (p *scanPipe) fingerprint() {
	defer p.wg.Done()
	for b := range p.work {
		for i, row := range b.rows {
			p.s.hashers.fill(row, b.data[i])
		}
		b.data = nil
		close(b.done)
	}
}

// Next advances to the next row in stream order.
func (p *scanPipe) Next() bool {
	for p.cur == nil || p.i >= len(p.cur.rows) {
		b, ok := <-p.ordered
		if !ok {
			p.ended = true
			return false
		}
		select {
		case <-b.done:
		case <-p.quit:
			return false
		}
		p.cur, p.i = b, 0
	}
	p.i++
	return true
}

// Values returns the current row.
func (p *scanPipe) Values() ([]any, error) { return p.cur.rows[p.i-1], nil }

// Err returns why the scan ended early, if it did: nil until the reader has finished.
func (p *scanPipe) Err() error {
	if p.ended {
		p.srcErr = p.readErr
	}
	return p.srcErr
}

// close stops the pipe and waits for its goroutines; the scanner's counts are final after it.
func (p *scanPipe) close() {
	close(p.quit)
	// The reader may be waiting on the consumer after COPY failed; stopping the iterator, which is
	// safe from any goroutine, ends that wait.
	p.s.iter.Stop()
	p.wg.Wait()
}
