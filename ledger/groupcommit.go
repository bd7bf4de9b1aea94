package ledger

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Group commit: PostgreSQL here commits about 5,000 one-row transactions a second but 87,000 rows
// a second in batched ones (docs/benchmarks-history.md, "Why the consumer does not scale with handlers"),
// so the SDK's keyed row updates from concurrent handlers are sent as one statement per kind
// (unnest of array parameters), each caller answered with its own row's result.
//
// There is no timer goroutine and nothing to stop: a flusher runs only while requests are
// pending. A lone caller is sent at once, through the single-row statement, and pays nothing.
// While a batch is in flight the next callers queue and go out together when a flusher is free.
const (
	// defaultGroupMaxBatch caps the rows of one statement. At 64, a consumer of 1,024 handlers
	// filled every batch (48 rows a statement on average, queues of hundreds behind two flushers);
	// at 256 it sends a third fewer statements for the same rows, and PostgreSQL's CPU per event
	// fell by about a tenth, a statement's fixed costs (planning, commit, round trip) spread over
	// more rows. 1,024 sent no fewer (docs/benchmarks.md).
	defaultGroupMaxBatch = 256
	// defaultGroupMaxWait is how long a flusher lingers for more requests, only while another
	// flush of its kind is in flight (the ledger is busy and a larger batch costs no more).
	defaultGroupMaxWait = time.Millisecond
	// defaultGroupFlushers bounds the statements of one kind in flight, so batching cannot take
	// every pooled connection from the handlers' reads and claims.
	defaultGroupFlushers = 2
	// groupKinds counts the queues: claims, call-started marks, completions, heartbeats.
	groupKinds = 4
	// groupFlushTimeout bounds a sent batch: its callers wait for its result past their own
	// deadlines (a row that may have been written is never reported as not written).
	groupFlushTimeout = lostConnectionBudget + 60*time.Second
)

// GroupCommitStats counts what the group committer sent since the store was opened.
type GroupCommitStats struct {
	// Statements counts statements sent (a batch, or a single-row statement for a lone caller or
	// a batch re-run row by row), Rows the requests they carried.
	Statements, Rows int64
	// Batches counts multi-row statements; Fallbacks the batches re-run one row at a time after
	// failing as a whole.
	Batches, Fallbacks int64
	// ReadStatements counts the queries that read events' rows (EffectsForEvent), ReadEvents the
	// events they read.
	ReadStatements, ReadEvents int64
	// StatementTime and ReadTime add up how long the statements and the reads took, from send to
	// answer: over Statements, the wait a handler's write pays once its statement is sent.
	StatementTime, ReadTime time.Duration
}

type groupResult struct {
	ok  bool
	err error
}

type groupRequest[T any] struct {
	key EffectKey
	// event, when set, is a second key the request holds while in flight: a claim's event
	// across its versions, so one batch never carries two claims of one event.
	event *EffectKey
	arg   T
	done  chan groupResult
	// taken is set under groupCommit.mu once the request is in a batch being sent.
	taken bool
}

// groupCommit coalesces the SDK's claims, call-started marks, completions and heartbeats.
type groupCommit struct {
	pool     *pgxpool.Pool
	maxBatch int
	maxWait  time.Duration
	flushers int

	mu sync.Mutex
	// inflight holds the keys of every batch being sent, of any kind: a key is never in two
	// concurrent batches, so two batches never lock the same rows in opposite orders, and a key
	// is at most once in a batch, so each returned row answers exactly one caller.
	inflight map[EffectKey]struct{}
	queues   []interface{ kick() }

	claim       *groupQueue[EffectClaim]
	callStarted *groupQueue[callStartedArg]
	complete    *groupQueue[EffectCompletion]
	heartbeat   *groupQueue[heartbeatArg]

	statements, rows, batches, fallbacks atomic.Int64
	// sending adds up the nanoseconds statements took (GroupCommitStats.StatementTime).
	sending atomic.Int64
	// beforeSend, for tests, runs before a batch of n requests of kind is sent.
	beforeSend func(kind string, n int)
}

type callStartedArg struct {
	owner   string
	ordinal int
}

type heartbeatArg struct {
	owner string
	lease time.Duration
}

func newGroupCommit(pool *pgxpool.Pool) *groupCommit {
	g := &groupCommit{pool: pool, maxBatch: defaultGroupMaxBatch, maxWait: defaultGroupMaxWait,
		flushers: defaultGroupFlushers, inflight: map[EffectKey]struct{}{}}
	g.callStarted = &groupQueue[callStartedArg]{g: g, kind: "call-started",
		single: func(ctx context.Context, r *groupRequest[callStartedArg]) (bool, error) {
			return EffectsCallStarted(ctx, pool, r.key, r.arg.owner, r.arg.ordinal)
		},
		batch: g.sendCallStarted}
	g.complete = &groupQueue[EffectCompletion]{g: g, kind: "complete",
		single: func(ctx context.Context, r *groupRequest[EffectCompletion]) (bool, error) {
			return EffectsComplete(ctx, pool, r.arg)
		},
		batch: g.sendComplete}
	g.heartbeat = &groupQueue[heartbeatArg]{g: g, kind: "heartbeat",
		single: func(ctx context.Context, r *groupRequest[heartbeatArg]) (bool, error) {
			return EffectsHeartbeat(ctx, pool, r.key, r.arg.owner, r.arg.lease)
		},
		batch: g.sendHeartbeat}
	g.claim = &groupQueue[EffectClaim]{g: g, kind: "claim",
		single: func(ctx context.Context, r *groupRequest[EffectClaim]) (bool, error) {
			return effectsClaimOnPool(ctx, pool, r.arg)
		},
		batch: g.sendClaim}
	g.queues = []interface{ kick() }{g.claim, g.callStarted, g.complete, g.heartbeat}
	return g
}

func (g *groupCommit) stats() GroupCommitStats {
	return GroupCommitStats{Statements: g.statements.Load(), Rows: g.rows.Load(),
		Batches: g.batches.Load(), Fallbacks: g.fallbacks.Load(), StatementTime: time.Duration(g.sending.Load())}
}

// groupQueue is one kind's pending requests and its flushers.
type groupQueue[T any] struct {
	g    *groupCommit
	kind string
	// single runs one request on its own: the existing statement, with its own retries.
	single func(ctx context.Context, r *groupRequest[T]) (bool, error)
	// batch sends reqs (distinct keys, two or more) as one statement and answers each.
	batch func(ctx context.Context, reqs []*groupRequest[T]) ([]bool, error)

	pending  []*groupRequest[T]
	flushing int
	// full wakes a lingering flusher once maxBatch requests are pending.
	full chan struct{}
}

// submit queues one request and waits for its answer. A request its caller gives up on before
// it was taken is dropped unsent; once taken it is answered with the statement's outcome.
func (q *groupQueue[T]) submit(ctx context.Context, key EffectKey, arg T) (bool, error) {
	return q.submitRequest(ctx, &groupRequest[T]{key: key, arg: arg})
}

func (q *groupQueue[T]) submitRequest(ctx context.Context, r *groupRequest[T]) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	r.done = make(chan groupResult, 1)
	g := q.g
	g.mu.Lock()
	if len(q.pending) == 0 && q.flushing < g.flushers && !g.busyLocked(r) {
		// A lone caller sends its own statement: handing it to a flusher goroutine and back
		// cost about a millisecond per statement on a loaded machine.
		q.flushing++
		g.holdLocked(r, true)
		r.taken = true
		g.mu.Unlock()
		q.send([]*groupRequest[T]{r})
		g.mu.Lock()
		q.releaseLocked([]*groupRequest[T]{r})
		if q.sendableLocked() {
			go q.flush() // keeps the flusher slot for those who queued meanwhile
		} else {
			q.flushing--
		}
		g.mu.Unlock()
		res := <-r.done
		return res.ok, res.err
	}
	q.pending = append(q.pending, r)
	if len(q.pending) >= g.maxBatch && q.full != nil {
		select {
		case q.full <- struct{}{}:
		default:
		}
	}
	q.startLocked()
	g.mu.Unlock()

	select {
	case res := <-r.done:
		return res.ok, res.err
	case <-ctx.Done():
	}
	g.mu.Lock()
	if !r.taken {
		q.pending = slices.DeleteFunc(q.pending, func(p *groupRequest[T]) bool { return p == r })
		g.mu.Unlock()
		return false, ctx.Err()
	}
	g.mu.Unlock()
	res := <-r.done
	return res.ok, res.err
}

// startLocked starts a flusher if requests wait and the kind has a flusher to spare.
func (q *groupQueue[T]) startLocked() {
	if len(q.pending) > 0 && q.flushing < q.g.flushers && q.sendableLocked() {
		q.flushing++
		go q.flush()
	}
}

func (q *groupQueue[T]) kick() {
	q.startLocked()
}

func (q *groupQueue[T]) sendableLocked() bool {
	for _, r := range q.pending {
		if !q.g.busyLocked(r) {
			return true
		}
	}
	return false
}

func (g *groupCommit) busyLocked(r interface {
	keys() (EffectKey, *EffectKey)
}) bool {
	key, event := r.keys()
	if _, busy := g.inflight[key]; busy {
		return true
	}
	if event != nil {
		_, busy := g.inflight[*event]
		return busy
	}
	return false
}

func (r *groupRequest[T]) keys() (EffectKey, *EffectKey) { return r.key, r.event }

func (g *groupCommit) holdLocked(r interface {
	keys() (EffectKey, *EffectKey)
}, hold bool) {
	key, event := r.keys()
	for _, k := range []*EffectKey{&key, event} {
		switch {
		case k == nil:
		case hold:
			g.inflight[*k] = struct{}{}
		default:
			delete(g.inflight, *k)
		}
	}
}

// takeLocked removes up to maxBatch pending requests whose keys are in no batch in flight.
func (q *groupQueue[T]) takeLocked() []*groupRequest[T] {
	g := q.g
	var batch []*groupRequest[T]
	rest := q.pending[:0]
	for _, r := range q.pending {
		if len(batch) == g.maxBatch || g.busyLocked(r) {
			rest = append(rest, r)
			continue
		}
		g.holdLocked(r, true)
		r.taken = true
		batch = append(batch, r)
	}
	clear(q.pending[len(rest):])
	q.pending = rest
	return batch
}

func (q *groupQueue[T]) flush() {
	g := q.g
	for {
		g.mu.Lock()
		if len(q.pending) < g.maxBatch && q.flushing > 1 && g.maxWait > 0 {
			// Another flush of this kind is in flight: wait briefly for a fuller batch.
			if q.full == nil {
				q.full = make(chan struct{}, 1)
			}
			full := q.full
			g.mu.Unlock()
			timer := time.NewTimer(g.maxWait)
			select {
			case <-full:
			case <-timer.C:
			}
			timer.Stop()
			g.mu.Lock()
		}
		batch := q.takeLocked()
		if len(batch) == 0 {
			q.flushing--
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()

		q.send(batch)

		g.mu.Lock()
		q.releaseLocked(batch)
		g.mu.Unlock()
	}
}

// releaseLocked frees a sent batch's keys; requests of other kinds may have waited for them.
func (q *groupQueue[T]) releaseLocked(batch []*groupRequest[T]) {
	g := q.g
	for _, r := range batch {
		g.holdLocked(r, false)
	}
	for _, other := range g.queues {
		if other != any(q) {
			other.kick()
		}
	}
}

// send runs batch and answers every request in it.
func (q *groupQueue[T]) send(batch []*groupRequest[T]) {
	g := q.g
	began := time.Now()
	defer func() { g.sending.Add(int64(time.Since(began))) }()
	ctx, cancel := context.WithTimeout(context.Background(), groupFlushTimeout)
	defer cancel()
	if g.beforeSend != nil {
		g.beforeSend(q.kind, len(batch))
	}
	g.statements.Add(1)
	g.rows.Add(int64(len(batch)))
	if len(batch) == 1 {
		ok, err := q.single(ctx, batch[0])
		batch[0].done <- groupResult{ok, err}
		return
	}
	g.batches.Add(1)
	oks, err := q.batch(ctx, batch)
	if err == nil {
		for i, r := range batch {
			r.done <- groupResult{ok: oks[i]}
		}
		return
	}
	if _, refused := errors.AsType[batchRefused](err); refused {
		// The server refused the statement as a whole and rolled it back: one bad row must not
		// fail the others, so each is run on its own.
		g.fallbacks.Add(1)
		for _, r := range batch {
			g.statements.Add(1)
			ok, err := q.single(ctx, r)
			r.done <- groupResult{ok, err}
		}
		return
	}
	// The outcome is unknown (the connection was lost past the retries, or the flush timed
	// out): every caller gets the error, which the SDK treats as doubt, as for a single row.
	for _, r := range batch {
		r.done <- groupResult{err: err}
	}
}
