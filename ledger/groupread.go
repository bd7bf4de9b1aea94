package ledger

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// effectsForEvents is effectsForEvent for many events at once: the reads of concurrent handlers
// (each the duplicate check of one pulled message) go out as one query. The lateral join keeps
// every look-up on the primary key whatever the planner guesses of the array's length.
const effectsForEvents = `
select e.* from unnest($1::text[], $2::text[]) with ordinality as k(consumer, event_id, i)
 cross join lateral (
   select ` + effectRowColumns + `
     from effects
    where consumer = k.consumer and event_id = k.event_id) e
 order by k.i, e.effect_version`

// defaultReadFlushers bounds the batched reads in flight; they take no locks and commit nothing,
// so two keep the handlers fed while a third would only take a connection from the writes.
const defaultReadFlushers = 2

// eventReads coalesces EffectsForEvent calls. Like the group committer it has no timer: a lone
// caller reads on its own, and callers arriving while reads are in flight share the next query.
type eventReads struct {
	pool     *pgxpool.Pool
	maxBatch int
	flushers int

	mu       sync.Mutex
	pending  []*eventRead
	flushing int
	// statements and events count what was sent, reading the time it took (GroupCommitStats).
	statements, events int64
	reading            time.Duration
	// beforeSend, for tests, runs before a read of n events is sent.
	beforeSend func(n int)
}

type eventRead struct {
	consumer, eventID string
	done              chan eventReadResult
}

type eventReadResult struct {
	rows []EffectRow
	err  error
}

func newEventReads(pool *pgxpool.Pool) *eventReads {
	return &eventReads{pool: pool, maxBatch: defaultGroupMaxBatch, flushers: defaultReadFlushers}
}

// read returns eventID's rows for consumer, lowest version first, as EffectsForEvent does. A
// caller that gives up is answered at once: a read changes nothing, so its query may run on.
func (g *eventReads) read(ctx context.Context, consumer, eventID string) ([]EffectRow, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	if len(g.pending) == 0 && g.flushing < g.flushers {
		g.flushing++
		g.statements++
		g.events++
		g.mu.Unlock()
		if g.beforeSend != nil {
			g.beforeSend(1)
		}
		began := time.Now()
		rows, err := EffectsForEvent(ctx, g.pool, consumer, eventID)
		g.mu.Lock()
		g.reading += time.Since(began)
		g.flushing--
		g.startLocked()
		g.mu.Unlock()
		return rows, err
	}
	r := &eventRead{consumer: consumer, eventID: eventID, done: make(chan eventReadResult, 1)}
	g.pending = append(g.pending, r)
	g.startLocked()
	g.mu.Unlock()
	select {
	case res := <-r.done:
		return res.rows, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g *eventReads) startLocked() {
	if len(g.pending) > 0 && g.flushing < g.flushers {
		g.flushing++
		go g.flush()
	}
}

func (g *eventReads) flush() {
	for {
		g.mu.Lock()
		n := min(len(g.pending), g.maxBatch)
		if n == 0 {
			g.flushing--
			g.mu.Unlock()
			return
		}
		batch := g.pending[:n:n]
		g.pending = g.pending[n:]
		g.statements++
		g.events += int64(n)
		g.mu.Unlock()
		g.send(batch)
	}
}

// send reads the batch's events in one query and answers each request with its own rows.
func (g *eventReads) send(batch []*eventRead) {
	type event struct{ consumer, id string }
	index := make(map[event]int, len(batch))
	var consumers, ids []string
	var tombstoneKeys []int64
	for _, r := range batch {
		e := event{r.consumer, r.eventID}
		if _, seen := index[e]; !seen {
			index[e] = len(consumers)
			consumers, ids = append(consumers, r.consumer), append(ids, r.eventID)
			tombstoneKeys = append(tombstoneKeys, tombstoneKey(r.consumer, r.eventID))
		}
	}
	if g.beforeSend != nil {
		g.beforeSend(len(batch))
	}
	ctx, cancel := context.WithTimeout(context.Background(), groupFlushTimeout)
	defer cancel()
	began := time.Now()
	defer func() {
		g.mu.Lock()
		g.reading += time.Since(began)
		g.mu.Unlock()
	}()
	byEvent := make([][]EffectRow, len(consumers))
	err := func() error {
		all, compact, err := readEffectRows(ctx, g.pool, tombstoneKeys, effectsForEvents, consumers, ids)
		if err != nil {
			return err
		}
		for _, row := range all {
			i, ok := index[event{row.Consumer, row.EventID}]
			if !ok {
				return fmt.Errorf("batched read returned event %q of consumer %s, not in its batch", row.EventID, row.Consumer)
			}
			byEvent[i] = append(byEvent[i], row)
		}
		compactByEvent := make([][]compactTombstone, len(consumers))
		for _, c := range compact {
			compactByEvent[c.index] = append(compactByEvent[c.index], c)
		}
		for i, cs := range compactByEvent {
			if len(cs) > 0 {
				byEvent[i] = withCompactTombstones(byEvent[i], consumers[i], ids[i], cs)
			}
		}
		return nil
	}()
	for _, r := range batch {
		if err != nil {
			r.done <- eventReadResult{err: fmt.Errorf("read the ledger rows of consumer %s event %q (with %d other events): %w",
				r.consumer, r.eventID, len(consumers)-1, err)}
			continue
		}
		// Each caller gets its own slice: the SDK may keep or change what it was given.
		rows := byEvent[index[event{r.consumer, r.eventID}]]
		r.done <- eventReadResult{rows: append([]EffectRow(nil), rows...)}
	}
}

func (g *eventReads) stats() (statements, events int64, took time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.statements, g.events, g.reading
}
