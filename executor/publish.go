package executor

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/ledger"
)

const (
	// pageSize is how many targets are read per round trip.
	pageSize = 1000
	// dlqPullBatch is how many DLQ messages one pull asks for, as the raw read + publish floor
	// does (dlq.PullBatch lowers it for large messages).
	dlqPullBatch = 2000
	// pagesAhead is how many pages the reader may be ahead of the publisher. With two, a page
	// read slowed by a busy ledger (8 ms became 140 ms in measured runs) left the publisher
	// waiting for targets; eight pages are about 1 MiB.
	pagesAhead = 8
	// handChunk is how many publishes go to the acknowledgement collector at once. One at a
	// time, each hand-off woke the collector: on two cores the scheduler's own work
	// (findRunnable, futex) was a third of the process's CPU while it published.
	handChunk = 64
	// publishAckTimeout makes every async publish resolve, acknowledged or failed.
	publishAckTimeout = 10 * time.Second
	// writeTimeout bounds a ledger write that must outlive a cancelled run.
	writeTimeout = 10 * time.Second
)

// pendingAck is one publish waiting for JetStream's acknowledgement. A publish the client could
// not send has no future: err says why, and refusal is set when NATS refused the message itself.
type pendingAck struct {
	target  ledger.ExecTarget
	msg     *nats.Msg
	future  jetstream.PubAckFuture
	err     error
	refusal string
	// span is the replayed message's trace (nil when not traced), ended at its acknowledgement.
	span trace.Span
}

// publishTargets publishes every target still to publish, in stream order. One goroutine pages
// the targets from the ledger, ahead of this one, which reads the DLQ forward, checks each
// payload against the plan, paces and publishes: as the raw read + publish floor does, a DLQ
// message goes from the read to the publish without a hand-off to another goroutine (with one,
// each hop was a wake-up waiting for a CPU on two cores shared with the NATS server). A target
// whose DLQ message is gone or changed is recorded as failed, not published. What is held is
// bounded: pagesAhead pages, one DLQ pull and handChunk publishes not yet handed to collectAcks.
func (s *session) publishTargets(ctx context.Context, st *runState, pub jetstream.JetStream, acks chan<- []pendingAck) error {
	defer close(acks)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan []ledger.ExecTarget, pagesAhead)
	pagesDone := make(chan error, 1)
	go func() { pagesDone <- s.readPages(ctx, pages) }()
	pubErr := s.publishPages(ctx, st, pub, pages, acks)
	// However publishing ended, the page reader stops and its error counts: its error closes
	// pages early, which publishPages cannot tell from the end of the targets.
	cancel()
	for range pages {
		// Drained, so a reader blocked on a send sees the cancel and returns.
	}
	pageErr := <-pagesDone
	for _, err := range []error{pubErr, pageErr} {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	// nil when every target was published; context.Canceled when the run is stopping.
	return errors.Join(pubErr, pageErr)
}

// readPages sends the targets still to publish, a keyset page at a time, and closes pages.
func (s *session) readPages(ctx context.Context, pages chan<- []ledger.ExecTarget) error {
	defer close(pages)
	var after uint64
	for {
		page, err := s.store.JobTargetsPageToPublish(ctx, s.publishPage(after, pageSize))
		if err != nil || len(page) == 0 {
			return err
		}
		after = page[len(page)-1].StreamSeq
		select {
		case pages <- page:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *session) publishPage(after uint64, limit int) ledger.PublishPage {
	return ledger.PublishPage{JobID: s.job.ID, Consumer: s.job.Consumer, Version: s.job.EffectVersionTo,
		AfterSeq: after, Limit: limit, NoRowsAhead: s.noRowsAhead}
}

// publishPages merges the pages with the DLQ read forward, publishes the targets whose message is
// the planned one and hands the publishes to collectAcks handChunk at a time, and records the
// others as failed a page at a time. It returns nil when pages is closed, and context.Canceled
// when the run is stopping.
func (s *session) publishPages(ctx context.Context, st *runState, pub jetstream.JetStream, pages <-chan []ledger.ExecTarget, acks chan<- []pendingAck) error {
	pace := newPacer(s.opts.Rate)
	replays := dlq.NewJobReplay(s.m.Source.Headers, s.job.ID, s.job.EffectVersionTo, s.job.WriteForbidden).Stripping(s.m.Source.StripHeaders)
	var source *dlq.Reader
	defer func() {
		if source != nil {
			source.Close()
		}
	}()
	sent := make([]pendingAck, 0, handChunk)
	// hand runs when handChunk publishes piled up, at the end of each page and before any wait
	// (a pause, the window, the pace, a lost connection), so no acknowledgement waits long behind
	// the publisher: a DLQ read that stalls holds back fewer than handChunk.
	hand := func() error {
		if len(sent) == 0 {
			return nil
		}
		select {
		case acks <- sent:
			sent = make([]pendingAck, 0, handChunk)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	beforeWait := func() { _ = hand() }
	for page := range pages {
		if source == nil {
			var err error
			if source, err = dlq.Open(ctx, s.js, s.m, page[0].StreamSeq, dlqPullBatch); err != nil {
				return err
			}
		}
		var failures []ledger.TargetOutcome
		bctx, batch := s.startBatch(ctx, page)
		for _, t := range page {
			src, why, err := source.Next(dlq.Planned{EventID: t.EventID, StreamSeq: t.StreamSeq, PayloadHash: t.PayloadHash})
			if err != nil {
				// What was published is acknowledged and recorded however the run stops.
				return s.recordSourceFailures(ctx, failures, errors.Join(err, hand()))
			}
			if why != "" {
				failures = append(failures, ledger.TargetOutcome{EventID: t.EventID, Detail: "not published: " + why})
				continue
			}
			proceed, err := st.waitTurn(ctx, pace, beforeWait)
			if err == nil && !proceed {
				err = context.Canceled
			}
			if err == nil {
				err = s.waitConnected(ctx, beforeWait)
			}
			if err != nil {
				return s.recordSourceFailures(ctx, failures, errors.Join(err, hand()))
			}
			a := pendingAck{target: t, msg: replays.Msg(t.OriginalSubject, src.Data, src.Header, t.EventID)}
			if s.traced {
				a.span = s.startReplay(bctx, t, a.msg)
			}
			a.future, a.err = pub.PublishMsgAsync(a.msg)
			if a.err != nil {
				a.refusal = publishRefusal(a.err, a.msg, s.js.Conn().MaxPayload())
			}
			// A refused message never reaches the consumer, so it is never in flight; one the
			// client could not send is retried like a failed acknowledgement.
			if a.refusal == "" {
				st.sent.Add(1)
			}
			sent = append(sent, a)
			if len(sent) == handChunk {
				if err := hand(); err != nil {
					return s.recordSourceFailures(ctx, failures, err)
				}
			}
		}
		// The page's last publishes go now: the next page may be a ledger read away.
		endBatch(batch, len(page)-len(failures), len(failures))
		if err := hand(); err != nil {
			return s.recordSourceFailures(ctx, failures, err)
		}
		if err := s.recordSourceFailures(ctx, failures, nil); err != nil {
			return err
		}
	}
	return nil
}

func (s *session) recordSourceFailures(ctx context.Context, failures []ledger.TargetOutcome, cause error) error {
	if len(failures) > 0 {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
		defer cancel()
		if _, err := s.store.JobTargetsSetOutcome(wctx, s.job.ID, ledger.TargetFailed, failures); err != nil {
			return err
		}
	}
	return cause
}

// collectAcks waits for each publish's acknowledgement in order and records the acknowledged
// targets as published, in batches. A failed publish is queued and retried with the others in
// rounds (publish_retry.go); a message NATS refused is its target's failure, recorded as failed.
func (s *session) collectAcks(ctx context.Context, pub jetstream.JetStream, acks <-chan []pendingAck, st *runState) error {
	marks := s.startMarking(ctx)
	var batch []string
	var refused []ledger.TargetOutcome
	var batchSince time.Time
	// hand records the refused targets and gives the acknowledged ones to the marker: when a writer
	// is idle and minMarkBatch piled up or the oldest waited a retryTick, and waiting for a writer
	// once maxMarkBatch piled up.
	hand := func() error {
		if len(refused) > 0 {
			if err := s.recordSourceFailures(ctx, refused, nil); err != nil {
				return err
			}
			refused = nil
		}
		if len(batch) == 0 {
			return nil
		}
		if batchSince.IsZero() {
			batchSince = time.Now()
		}
		if len(batch) < minMarkBatch && time.Since(batchSince) < retryTick {
			return nil
		}
		taken, err := marks.offer(batch, len(batch) >= maxMarkBatch)
		if taken {
			batch, batchSince = nil, time.Time{}
		}
		return err
	}
	stop := func(err error) error {
		return errors.Join(s.recordSourceFailures(ctx, refused, nil), marks.finish(batch), err)
	}
	retries := &retryQueue{}
	tick := time.NewTicker(retryTick)
	defer tick.Stop()
	for acks != nil || len(retries.failed) > 0 {
		select {
		case chunk, open := <-acks:
			if !open {
				acks = nil
				break
			}
			for _, a := range chunk {
				ack, err := s.awaitAck(ctx, a)
				endReplay(a.span, ack, err)
				if ctx.Err() != nil {
					return stop(ctx.Err())
				}
				if err == nil {
					st.acked.Add(1)
					if ack.Duplicate {
						st.deduplicated.Add(1)
					}
					batch = append(batch, a.target.EventID)
				} else if perr := publishNotPermitted(s.js.Conn(), a.msg.Subject); perr != nil {
					return stop(perr)
				} else if why := s.refusal(a, err, st); why != "" {
					refused = append(refused, ledger.TargetOutcome{EventID: a.target.EventID, Detail: "not published: " + why})
				} else {
					retries.add(a, err)
				}
			}
		case <-tick.C:
		case <-ctx.Done():
			return stop(ctx.Err())
		}
		if retries.due(s.js.Conn()) {
			published, failed, err := s.retryRound(ctx, pub, retries, st)
			batch, refused = append(batch, published...), append(refused, failed...)
			if err != nil {
				return stop(err)
			}
		}
		if err := s.retriesExpired(retries); err != nil {
			return stop(err)
		}
		if err := hand(); err != nil {
			return stop(err)
		}
	}
	if err := s.recordSourceFailures(ctx, refused, nil); err != nil {
		return errors.Join(marks.finish(batch), err)
	}
	return marks.finish(batch)
}

// awaitAck waits for a's acknowledgement, which the async publish timeout bounds.
func (s *session) awaitAck(ctx context.Context, a pendingAck) (*jetstream.PubAck, error) {
	if a.future == nil {
		return nil, a.err
	}
	select {
	case ack := <-a.future.Ok():
		return ack, nil
	case err := <-a.future.Err():
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
