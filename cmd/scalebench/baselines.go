package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/demo"
	"github.com/replayctl/replayctl/protocol"
)

// The baselines' own streams, so nothing they publish reaches the billing consumer.
const (
	rawStream, rawSubject     = "BENCH_RAW_REPLAY", "benchraw.billing.charge"
	naiveStream, naiveSubject = "BENCH_NAIVE_REPLAY", "benchnaive.billing.charge"
	// asyncMaxPending is the executor's own bound on unacknowledged async publishes.
	asyncMaxPending = 4096
	// asyncStallWait is how long a publish may wait for a free slot under asyncMaxPending.
	asyncStallWait = time.Minute
)

// rawScan reads the whole DLQ with an ordered consumer and does nothing else: the floor under
// plan's scan.
func rawScan(ctx context.Context, js jetstream.JetStream, stream string) (phase, error) {
	start := time.Now()
	n, err := scanDLQ(ctx, js, stream, 0, func(jetstream.Msg) error { return nil })
	if err != nil {
		return phase{}, fmt.Errorf("raw scan of %s: %w", stream, err)
	}
	return timedPhase("raw DLQ scan (ordered consumer, nothing else)", n, time.Since(start)), nil
}

// scanDLQ feeds each message of stream to fn, the first limit messages (0: all).
func scanDLQ(ctx context.Context, js jetstream.JetStream, stream string, limit int64, fn func(jetstream.Msg) error) (int64, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	total := int64(s.CachedInfo().State.Msgs)
	if limit > 0 {
		total = min(total, limit)
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return 0, err
	}
	it, err := c.Messages(jetstream.PullMaxMessages(2000))
	if err != nil {
		return 0, err
	}
	defer it.Stop()
	var n int64
	for n < total {
		msg, err := it.Next()
		if err != nil {
			return n, err
		}
		if err := fn(msg); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// rawJoin copies the event IDs into a temporary table and joins them against the consumer's
// ledger rows: the floor under plan's classification.
func rawJoin(ctx context.Context, pool *pgxpool.Pool, consumer string, events int) (phase, error) {
	ids := make([][]any, events)
	for i := range ids {
		ids[i] = []any{demo.EventID(i)}
	}
	start := time.Now()
	var found int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `create temp table bench_ids (event_id text not null) on commit drop`); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"bench_ids"}, []string{"event_id"}, pgx.CopyFromRows(ids)); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `select count(e.event_id) from bench_ids i
			left join effects e on e.consumer = $1 and e.event_id = i.event_id`, consumer).Scan(&found)
	})
	if err != nil {
		return phase{}, fmt.Errorf("raw bulk join: %w", err)
	}
	p := timedPhase("raw PostgreSQL bulk join (COPY the IDs, one join)", int64(events), time.Since(start))
	p.Note = fmt.Sprintf("%d ledger rows matched", found)
	return p, nil
}

// replayHeaders sets on msg the headers execute sets on a replay, so the raw and naive
// publishes cost the server what execute's do (the Nats-Msg-Id dedup included).
func replayHeaders(msg *nats.Msg, jobID, eventID string) {
	msg.Header.Set(protocol.HeaderEventID, eventID)
	msg.Header.Set(protocol.HeaderReplayJob, jobID)
	msg.Header.Set(protocol.HeaderReplayMode, protocol.ModeExecute)
	msg.Header.Set(protocol.HeaderReplayEffectVersion, "2")
	msg.Header.Set(protocol.HeaderReplayWriteForbidden, "false")
	msg.Header.Set(protocol.HeaderMsgID, protocol.MsgID(jobID, eventID))
}

// benchPayload is an order of the size the demo seed publishes.
func benchPayload(i int) []byte {
	b, _ := json.Marshal(billing.Order{OrderID: demo.OrderID(i), Customer: fmt.Sprintf("cus_%04d", i%977),
		AmountCents: int64(500 + (i*37)%20000), Currency: "EUR"})
	return b
}

// rawPublish publishes events prepared replay messages with JetStream's async publish, at most
// asyncMaxPending unacknowledged, and waits for every ack: the ceiling over execute's publishing.
func rawPublish(ctx context.Context, nc *nats.Conn, events int) (phase, error) {
	msgs := make([]*nats.Msg, events)
	for i := range msgs {
		msgs[i] = nats.NewMsg(rawSubject)
		msgs[i].Data = benchPayload(i)
		replayHeaders(msgs[i], "job-raw", demo.EventID(i))
	}
	took, err := asyncPublish(ctx, nc, func(publish func(*nats.Msg) error) (int64, error) {
		for _, m := range msgs {
			if err := publish(m); err != nil {
				return 0, err
			}
		}
		return int64(len(msgs)), nil
	})
	if err != nil {
		return phase{}, fmt.Errorf("raw publish: %w", err)
	}
	return timedPhase("raw JetStream async publish (prepared messages)", int64(events), took), nil
}

// rawCopy reads the DLQ forward and async-publishes each message as a replay, and nothing else
// (no ledger, no payload check): the floor under execute's publishing, which must read every
// target's message before it can publish it.
func rawCopy(ctx context.Context, js jetstream.JetStream, nc *nats.Conn, stream string) (phase, error) {
	var n int64
	took, err := asyncPublish(ctx, nc, func(publish func(*nats.Msg) error) (int64, error) {
		return scanDLQ(ctx, js, stream, 0, func(dlqMsg jetstream.Msg) error {
			m := nats.NewMsg(rawSubject)
			m.Data = dlqMsg.Data()
			replayHeaders(m, "job-raw-copy", dlqMsg.Headers().Get(dlq.DefaultHeaders.EventID)+"-"+strconv.FormatInt(n, 10))
			n++
			return publish(m)
		})
	})
	if err != nil {
		return phase{}, fmt.Errorf("raw read and publish: %w", err)
	}
	return timedPhase("raw DLQ read + async publish of each message", n, took), nil
}

// asyncPublish runs feed with a publish function on a fresh raw stream, at most asyncMaxPending
// unacknowledged, waits for every ack and returns the time from the start to the last ack.
func asyncPublish(ctx context.Context, nc *nats.Conn, feed func(publish func(*nats.Msg) error) (int64, error)) (time.Duration, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	if err := recreateStream(ctx, js, rawStream, rawSubject); err != nil {
		return 0, err
	}
	defer func() { _ = js.DeleteStream(context.WithoutCancel(ctx), rawStream) }()
	return asyncPublishTo(ctx, nc, feed)
}

// asyncPublishTo is asyncPublish onto whatever stream holds the messages' subjects.
func asyncPublishTo(ctx context.Context, nc *nats.Conn, feed func(publish func(*nats.Msg) error) (int64, error)) (time.Duration, error) {
	var failed atomic.Int64
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(asyncMaxPending),
		jetstream.WithPublishAsyncErrHandler(func(jetstream.JetStream, *nats.Msg, error) { failed.Add(1) }))
	if err != nil {
		return 0, err
	}
	start := time.Now()
	n, err := feed(func(m *nats.Msg) error {
		// With the client's default of 200 ms, a server slowed by other work on the machine failed
		// the whole run ("stalled with too many outstanding async published messages"); waiting is
		// what a floor measures.
		_, err := js.PublishMsgAsync(m, jetstream.WithStallWait(asyncStallWait))
		return err
	})
	if err != nil {
		return 0, err
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	took := time.Since(start)
	if f := failed.Load(); f > 0 {
		return 0, fmt.Errorf("%d of %d publishes failed", f, n)
	}
	return took, nil
}

// naiveScript is the replay a user writes instead of replayctl: for each DLQ message, one SELECT
// of its ledger row, then one synchronous publish. The plan half is the loop without the publish.
func naiveScript(ctx context.Context, js jetstream.JetStream, nc *nats.Conn, pool *pgxpool.Pool, stream, consumer string, limit int) (plan, exec phase, err error) {
	pub, err := jetstream.New(nc)
	if err != nil {
		return plan, exec, err
	}
	if err := recreateStream(ctx, pub, naiveStream, naiveSubject); err != nil {
		return plan, exec, err
	}
	defer func() { _ = pub.DeleteStream(context.WithoutCancel(ctx), naiveStream) }()
	var publishing time.Duration
	var i int
	start := time.Now()
	n, err := scanDLQ(ctx, js, stream, int64(limit), func(dlqMsg jetstream.Msg) error {
		eventID := dlqMsg.Headers().Get(dlq.DefaultHeaders.EventID)
		// plan skips an ID it cannot target (the demo seeds one of invalid UTF-8, which PostgreSQL
		// refuses with 22021), so the script does too rather than failing the run on it.
		if protocol.ValidateEventID(eventID) != nil {
			return nil
		}
		var state string
		err := pool.QueryRow(ctx, `select state from effects where consumer = $1 and event_id = $2
			order by effect_version desc limit 1`, consumer, eventID).Scan(&state)
		if err != nil && err != pgx.ErrNoRows {
			return fmt.Errorf("naive SELECT of %s: %w", eventID, err)
		}
		p := time.Now()
		msg := nats.NewMsg(naiveSubject)
		msg.Data = benchPayload(i)
		replayHeaders(msg, "job-naive", eventID+"-"+strconv.Itoa(i))
		if _, err := pub.PublishMsg(ctx, msg); err != nil {
			return fmt.Errorf("naive publish of %s: %w", eventID, err)
		}
		publishing += time.Since(p)
		i++
		return nil
	})
	if err != nil {
		return plan, exec, err
	}
	total := time.Since(start)
	plan = timedPhase("naive script, plan half (read DLQ, one SELECT per event)", n, total-publishing)
	exec = timedPhase("naive script (one SELECT and one synchronous publish per event)", n, total)
	return plan, exec, nil
}

func recreateStream(ctx context.Context, js jetstream.JetStream, name, subject string) error {
	if err := js.DeleteStream(ctx, name); err != nil && err != jetstream.ErrStreamNotFound {
		return fmt.Errorf("delete stream %s: %w", name, err)
	}
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Storage: jetstream.FileStorage})
	if err != nil {
		return fmt.Errorf("create stream %s: %w", name, err)
	}
	return nil
}
