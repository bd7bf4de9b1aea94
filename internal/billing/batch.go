package billing

import (
	"context"
	"sync"
	"time"
)

// maxBatch bounds the rows of one statement.
const maxBatch = 256

// batchTimeout bounds a statement sent for several callers: no single caller's context governs it.
const batchTimeout = 30 * time.Second

// batcher sends the rows concurrent callers write to one table as one statement. The first caller
// to find no statement in flight sends what is pending, its own row included; callers arriving
// meanwhile queue, and whoever's statement returns with rows still queued hands them to a new
// sender. Nothing waits on a timer: a lone caller pays one statement, as before, and under load
// the rows of one commit grow with the load, which is what lets the example service write at the
// speed of PostgreSQL rather than at one commit per row.
type batcher[T any] struct {
	send func(ctx context.Context, rows []T) error

	mu      sync.Mutex
	pending []batchRow[T]
	sending bool
}

type batchRow[T any] struct {
	row  T
	done chan error
}

// write queues row and returns once the statement carrying it committed or failed. A failed
// statement fails every row in it: the caller treats it as a write that may not have happened.
func (b *batcher[T]) write(ctx context.Context, row T) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	b.mu.Lock()
	b.pending = append(b.pending, batchRow[T]{row: row, done: done})
	if !b.sending {
		b.sending = true
		b.mu.Unlock()
		b.flushOnce()
	} else {
		b.mu.Unlock()
	}
	return <-done
}

// flushOnce sends one statement of pending rows and, if more queued meanwhile, leaves them to a
// goroutine, so the caller that sent is answered without waiting for the others' statements.
func (b *batcher[T]) flushOnce() {
	b.mu.Lock()
	n := min(len(b.pending), maxBatch)
	taken := b.pending[:n:n]
	b.pending = b.pending[n:]
	b.mu.Unlock()

	rows := make([]T, len(taken))
	for i, r := range taken {
		rows[i] = r.row
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	err := b.send(ctx, rows)
	cancel()
	for _, r := range taken {
		r.done <- err
	}

	b.mu.Lock()
	if len(b.pending) == 0 {
		b.sending = false
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	go b.flushOnce()
}
