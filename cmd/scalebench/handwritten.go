package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/internal/demo"
	"github.com/replayctl/replayctl/protocol"
)

// The hand-written consumer's own stream and table, so nothing it does reaches the billing
// consumer or the ledger replayctl reads.
const (
	handStream, handSubject = "BENCH_HAND_CONSUMER", "benchhand.billing.charge"
	handTable               = "bench_hand_effects"
	handMaxConns            = 40
)

// handWrittenConsumer is a baseline, not replayctl code: the smallest idempotent consumer a
// person would write by hand, with the same number of handlers as the billing consumer. Per
// message it runs one `insert … on conflict do nothing` (the claim) and one update (the
// outcome), each its own commit, then acks; no lease, no call-started marks, no version check.
// Its SQL lives here, outside ledger/, because it is the baseline itself: what the SDK's
// end-to-end rate is judged against. The messages are published before the clock starts; the
// rate is from the first delivery to the last outcome committed.
func handWrittenConsumer(ctx context.Context, js jetstream.JetStream, nc *nats.Conn, dbURL string, events, handlers int) (phase, error) {
	if err := recreateStream(ctx, js, handStream, handSubject); err != nil {
		return phase{}, err
	}
	defer func() { _ = js.DeleteStream(context.WithoutCancel(ctx), handStream) }()
	if _, err := asyncPublishTo(ctx, nc, func(publish func(*nats.Msg) error) (int64, error) {
		for i := range events {
			m := nats.NewMsg(handSubject)
			m.Data = benchPayload(i)
			replayHeaders(m, "job-hand", demo.EventID(i))
			if err := publish(m); err != nil {
				return 0, err
			}
		}
		return int64(events), nil
	}); err != nil {
		return phase{}, fmt.Errorf("hand-written consumer: seed %s: %w", handStream, err)
	}

	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return phase{}, err
	}
	// One connection per handler, up to handMaxConns: beyond that PostgreSQL (max_connections
	// 100 by default, shared with the rest of the run) refuses them, and so would it a script.
	cfg.MaxConns = int32(min(handlers, handMaxConns))
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return phase{}, fmt.Errorf("hand-written consumer: connect to PostgreSQL: %w", err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `drop table if exists `+handTable+`;
		create table `+handTable+` (consumer text not null, event_id text not null, state text not null,
			result text, updated_at timestamptz not null default now(), primary key (consumer, event_id))`); err != nil {
		return phase{}, fmt.Errorf("hand-written consumer: create %s: %w", handTable, err)
	}
	defer func() { _, _ = pool.Exec(context.WithoutCancel(ctx), `drop table if exists `+handTable) }()

	cons, err := js.CreateOrUpdateConsumer(ctx, handStream, jetstream.ConsumerConfig{
		Durable: "hand", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: handlers * 4, AckWait: time.Minute})
	if err != nil {
		return phase{}, fmt.Errorf("hand-written consumer: create consumer: %w", err)
	}
	msgs := make(chan jetstream.Msg, handlers)
	var done atomic.Int64
	finished := make(chan struct{})
	var failed error
	var failOnce sync.Once
	fail := func(err error) { failOnce.Do(func() { failed = err; close(finished) }) }
	var wg sync.WaitGroup
	for range handlers {
		wg.Go(func() {
			for m := range msgs {
				id := m.Headers().Get(protocol.HeaderEventID)
				if _, err := pool.Exec(ctx, `insert into `+handTable+` (consumer, event_id, state) values ('billing', $1, 'claimed')
					on conflict do nothing`, id); err != nil {
					fail(fmt.Errorf("hand-written consumer: claim %s: %w", id, err))
					return
				}
				if _, err := pool.Exec(ctx, `update `+handTable+` set state = 'completed', result = $2, updated_at = now()
					where consumer = 'billing' and event_id = $1`, id, "charged"); err != nil {
					fail(fmt.Errorf("hand-written consumer: complete %s: %w", id, err))
					return
				}
				_ = m.Ack()
				if done.Add(1) == int64(events) {
					fail(nil)
				}
			}
		})
	}
	start := time.Now()
	cc, err := cons.Consume(func(m jetstream.Msg) {
		select {
		case msgs <- m:
		case <-finished:
		}
	}, jetstream.PullMaxMessages(handlers*2))
	if err != nil {
		close(msgs)
		return phase{}, fmt.Errorf("hand-written consumer: consume: %w", err)
	}
	select {
	case <-finished:
	case <-ctx.Done():
		fail(ctx.Err())
	}
	took := time.Since(start)
	cc.Stop()
	<-cc.Closed()
	close(msgs)
	wg.Wait()
	if failed != nil {
		return phase{}, failed
	}
	var completed int64
	if err := pool.QueryRow(ctx, `select count(*) from `+handTable+` where state = 'completed'`).Scan(&completed); err != nil {
		return phase{}, err
	}
	if completed != int64(events) {
		return phase{}, errors.New("hand-written consumer: not every message completed")
	}
	p := timedPhase(fmt.Sprintf("hand-written idempotent consumer (insert on conflict + update per message, %d handlers)", handlers), completed, took)
	p.Note = "baseline for execute end to end"
	return p, nil
}
