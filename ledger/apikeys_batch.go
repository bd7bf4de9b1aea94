package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replayctl/replayctl/apikey"
)

// apiBatch sends the keyed statements concurrent API requests make (claims; call-started marks
// and completions) as one pgx batch: the first caller to find none in flight sends what is
// pending, its own row included; rows arriving meanwhile wait for the next batch, which the
// caller whose batch returned hands to a new sender. Nothing waits on a timer, so a lone request
// pays one statement as before, and 64 concurrent ones share a commit instead of queueing for
// 64 (docs/benchmarks.md, "API idempotency"). Each batch's rows are sorted by key, so two
// batches in flight take their row locks in the same order and never deadlock.
type apiBatch[T, R any] struct {
	pool *pgxpool.Pool
	send func(ctx context.Context, conn batchSender, rows []T) (map[apiOwned]R, error)
	key  func(T) apiOwned

	mu      sync.Mutex
	pending []*apiBatchItem[T, R]
	// senders counts the statements in flight, at most apiBatchSenders.
	senders int
	// statements, rows and nanos count what was sent and how long it took, for APIBatchStats.
	statements, rows, nanos atomic.Int64
}

// apiOwned names a row and the lease owner a change of it is for.
type apiOwned struct{ scopeHash, keyHash, owner string }

type apiBatchItem[T, R any] struct {
	row    T
	done   chan struct{}
	result R
	err    error
}

// apiBatchSenders is how many batches of one kind may be in flight. Two or four let the next batch
// gather while one waits for its commit, but each then held fewer rows, and on two cores the
// extra statements cost more than the wait: 64 clients made 5,000 requests/s with one at a
// time and 3,200-4,200 with two or four, in the same sitting (docs/benchmarks.md).
const apiBatchSenders = 1

// apiBatchMax bounds the rows of one statement.
const apiBatchMax = 256

// apiBatchTimeout bounds a statement sent for several callers: no one caller's context governs it.
const apiBatchTimeout = 30 * time.Second

func (b *apiBatch[T, R]) do(ctx context.Context, row T) (R, error) {
	it := &apiBatchItem[T, R]{row: row, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, it)
	start := b.senders < apiBatchSenders
	if start {
		b.senders++
	}
	b.mu.Unlock()
	if start {
		b.sendPending()
	}
	select {
	case <-it.done:
		return it.result, it.err
	case <-ctx.Done():
		// The row may still be sent: the caller treats the outcome as unknown.
		var zero R
		return zero, ctx.Err()
	}
}

// sendPending sends one statement of what is pending, then hands what arrived meanwhile to a new
// sender so the caller returns with its own answer.
func (b *apiBatch[T, R]) sendPending() {
	ctx, cancel := context.WithTimeout(context.Background(), apiBatchTimeout)
	defer cancel()
	// The connection first, the rows after: what arrives while a connection is awaited goes
	// into this statement instead of waiting for the next.
	conn, err := b.pool.Acquire(ctx)
	b.mu.Lock()
	items := b.take()
	b.mu.Unlock()
	rows := make([]T, len(items))
	for i, it := range items {
		rows[i] = it.row
	}
	b.statements.Add(1)
	b.rows.Add(int64(len(rows)))
	var done map[apiOwned]R
	if err == nil {
		began := time.Now()
		done, err = b.send(ctx, conn, rows)
		b.nanos.Add(int64(time.Since(began)))
		conn.Release()
	}
	for _, it := range items {
		it.result, it.err = done[b.key(it.row)], err
		close(it.done)
	}
	b.mu.Lock()
	more := len(b.pending) > 0
	if !more {
		b.senders--
	}
	b.mu.Unlock()
	if more {
		go b.sendPending()
	}
}

// take removes the next statement's rows from pending, at most apiBatchMax, sorted by record.
func (b *apiBatch[T, R]) take() []*apiBatchItem[T, R] {
	n := min(len(b.pending), apiBatchMax)
	items := slices.Clone(b.pending[:n])
	b.pending = b.pending[n:]
	b.sortByKey(items)
	return items
}

func (b *apiBatch[T, R]) sortByKey(items []*apiBatchItem[T, R]) {
	slices.SortFunc(items, func(x, y *apiBatchItem[T, R]) int {
		kx, ky := b.key(x.row), b.key(y.row)
		return cmp.Or(cmp.Compare(kx.scopeHash, ky.scopeHash), cmp.Compare(kx.keyHash, ky.keyHash))
	})
}

// apiCallMark is one call-started mark.
type apiCallMark struct {
	key   apikey.Key
	owner string
}

// batchSender is a pooled connection a statement batch goes out on.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// apiWrite is a call-started mark or a completion.
type apiWrite struct {
	mark       *apiCallMark
	completion *apikey.Completion
}

func (w apiWrite) owned() apiOwned {
	if w.mark != nil {
		return apiOwned{w.mark.key.ScopeHash, w.mark.key.KeyHash, w.mark.owner}
	}
	c := w.completion
	return apiOwned{c.ScopeHash, c.KeyHash, c.Owner}
}

// newAPIWrites batches the marks and the completions together: the marks' commit waits for its
// WAL flush, and the completions ride in the same transaction instead of paying a commit of
// their own. A batch of completions alone does not wait (APIKeysComplete). Each row is its own
// statement by primary key, and the rows go out as one pgx batch: one round trip, one commit. A
// statement over unnest of arrays did the same in one statement, but PostgreSQL planned it for
// each batch (a generic plan of it scanned the whole table) and the planning cost more than the
// statements it saved (docs/benchmarks.md).
func newAPIWrites(pool *pgxpool.Pool) *apiBatch[apiWrite, bool] {
	return &apiBatch[apiWrite, bool]{
		pool: pool,
		key:  apiWrite.owned,
		send: func(ctx context.Context, conn batchSender, rows []apiWrite) (map[apiOwned]bool, error) {
			b := claimWithoutFlush()
			for _, w := range rows {
				if w.mark != nil {
					b = &pgx.Batch{}
					break
				}
			}
			return sendOwnedRows(ctx, conn, b, len(rows), func(i int) (apiOwned, string, []any) {
				w := rows[i]
				if m := w.mark; m != nil {
					return w.owned(), apiKeysCallStarted, []any{m.key.ScopeHash, m.key.KeyHash, m.owner}
				}
				c := w.completion
				return w.owned(), apiKeysComplete, []any{c.ScopeHash, c.KeyHash, c.Owner, c.Status, c.KeyID, c.Sealed,
					c.ExternalRef, c.ReplayWindow.Milliseconds(), c.EvidenceWindow.Milliseconds()}
			})
		},
	}
}

// sendOwnedRows queues n single-row updates after b's settings, sends them as one batch and
// reports which (row, owner) each changed.
func sendOwnedRows(ctx context.Context, conn batchSender, b *pgx.Batch, n int, row func(i int) (apiOwned, string, []any)) (map[apiOwned]bool, error) {
	done := make(map[apiOwned]bool, n)
	for i := range n {
		o, query, args := row(i)
		b.Queue(query, args...).Exec(func(tag pgconn.CommandTag) error {
			done[o] = tag.RowsAffected() == 1
			return nil
		})
	}
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("update API records: %w", err)
	}
	return done, nil
}

// APIBatchStats is how the middleware's writes were batched: statements sent and rows in them,
// per kind.
type APIBatchStats struct {
	// Claims are the claims; Writes the call-started marks and completions, batched together.
	ClaimStatements, ClaimRows int64
	WriteStatements, WriteRows int64
	// ClaimTime and WriteTime are the statements' total time.
	ClaimTime, WriteTime time.Duration
}

// APIBatchStats returns the counts since the store opened.
func (s *Store) APIBatchStats() APIBatchStats {
	return APIBatchStats{
		ClaimStatements: s.apiClaims.statements.Load(), ClaimRows: s.apiClaims.rows.Load(),
		WriteStatements: s.apiWrites.statements.Load(), WriteRows: s.apiWrites.rows.Load(),
		ClaimTime: time.Duration(s.apiClaims.nanos.Load()), WriteTime: time.Duration(s.apiWrites.nanos.Load()),
	}
}
