package executor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/internal/dlqsource"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
)

const (
	// pageSize is how many targets are read per round trip, and the DLQ reader's batch.
	pageSize = 1000
	// markBatch and markEvery bound how long an acknowledged publish waits to be recorded.
	markBatch = 500
	markEvery = 500 * time.Millisecond
	// publishAckTimeout makes every async publish resolve, acknowledged or failed.
	publishAckTimeout = 10 * time.Second
	// publishRetries is how often a failed publish is tried again, with the same Nats-Msg-Id,
	// before the run stops.
	publishRetries = 3
	// writeTimeout bounds a ledger write that must outlive a cancelled run.
	writeTimeout = 10 * time.Second
)

// pendingAck is one publish waiting for JetStream's acknowledgement.
type pendingAck struct {
	target ledger.ExecTarget
	msg    *nats.Msg
	future jetstream.PubAckFuture
}

// publishTargets pages the targets still to publish in stream order, merges them with the DLQ
// read forward, and publishes each once its turn comes. A target whose DLQ message is gone or
// changed is recorded as failed, not published.
func (s *session) publishTargets(ctx context.Context, st *runState, pub jetstream.JetStream, acks chan<- pendingAck) error {
	defer close(acks)
	var dlq *dlqsource.Reader
	defer func() {
		if dlq != nil {
			dlq.Close()
		}
	}()
	pace := newPacer(s.opts.Rate)
	var after uint64
	for {
		page, err := s.store.JobTargetsPageToPublish(ctx, s.job.ID, s.job.Consumer, s.job.EffectVersionTo, after, pageSize)
		if err != nil || len(page) == 0 {
			return err
		}
		after = page[len(page)-1].StreamSeq
		if dlq == nil {
			if dlq, err = dlqsource.Open(ctx, s.js, s.m, page[0].StreamSeq, pageSize); err != nil {
				return err
			}
		}
		var failures []ledger.TargetOutcome
		for _, t := range page {
			src, why, err := dlq.Next(dlqsource.Target{EventID: t.EventID, StreamSeq: t.StreamSeq, PayloadHash: t.PayloadHash})
			if err != nil {
				return err
			}
			if why != "" {
				failures = append(failures, ledger.TargetOutcome{EventID: t.EventID, Detail: "not published: " + why})
				continue
			}
			if proceed, err := st.waitTurn(ctx, pace); err != nil || !proceed {
				return s.recordSourceFailures(ctx, failures, err)
			}
			msg := s.replayMsg(t, src)
			future, err := pub.PublishMsgAsync(msg)
			if err != nil {
				return fmt.Errorf("publish event %s of job %s to %s: %w; nothing is lost: run execute again to continue", t.EventID, s.job.ID, t.OriginalSubject, err)
			}
			st.sent.Add(1)
			select {
			case acks <- pendingAck{target: t, msg: msg, future: future}:
			case <-ctx.Done():
				return s.recordSourceFailures(ctx, failures, ctx.Err())
			}
		}
		if err := s.recordSourceFailures(ctx, failures, nil); err != nil {
			return err
		}
	}
}

func (s *session) recordSourceFailures(ctx context.Context, failures []ledger.TargetOutcome, cause error) error {
	if len(failures) > 0 {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
		defer cancel()
		if _, err := ledger.JobTargetsSetOutcome(wctx, s.store.Pool, s.job.ID, ledger.TargetFailed, failures); err != nil {
			return err
		}
	}
	return cause
}

// replayMsg is target t's replay: the DLQ message's payload and headers, less the DLQ's own
// headers, on its original subject, with the replay protocol's headers.
func (s *session) replayMsg(t ledger.ExecTarget, src dlqsource.Message) *nats.Msg {
	msg := nats.NewMsg(t.OriginalSubject)
	msg.Data = src.Data
	h := s.m.Source.Headers
	drop := map[string]bool{h.EventID: true, h.Reason: true, h.OriginalSubject: true, h.Attempts: true, h.FailedAt: true}
	for name, values := range src.Header {
		if drop[name] || strings.HasPrefix(name, "Nats-") || strings.HasPrefix(name, "Replay-") {
			continue
		}
		msg.Header[name] = values
	}
	msg.Header.Set(protocol.HeaderEventID, t.EventID)
	msg.Header.Set(protocol.HeaderReplayJob, s.job.ID)
	msg.Header.Set(protocol.HeaderReplayMode, protocol.ModeExecute)
	msg.Header.Set(protocol.HeaderReplayEffectVersion, strconv.Itoa(s.job.EffectVersionTo))
	msg.Header.Set(protocol.HeaderReplayWriteForbidden, protocol.FormatBool(s.job.WriteForbidden))
	msg.Header.Set(protocol.HeaderMsgID, protocol.MsgID(s.job.ID, t.EventID))
	return msg
}

// collectAcks waits for each publish's acknowledgement in order and records the acknowledged
// targets as published, in batches. A failed publish is tried again with the same Nats-Msg-Id,
// which JetStream deduplicates; one that keeps failing stops the run (rerunning it continues).
func (s *session) collectAcks(ctx context.Context, pub jetstream.JetStream, acks <-chan pendingAck, st *runState) error {
	var batch []string
	lastMark := time.Now()
	mark := func() error {
		if len(batch) == 0 {
			return nil
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
		defer cancel()
		_, err := s.store.JobTargetsMarkPublished(wctx, s.job.ID, batch, s.opts.Now().UTC())
		batch, lastMark = batch[:0], time.Now()
		return err
	}
	for a := range acks {
		ack, err := s.awaitAck(ctx, pub, a)
		if err != nil {
			return errors.Join(mark(), err)
		}
		st.acked.Add(1)
		if ack.Duplicate {
			st.deduplicated.Add(1)
		}
		batch = append(batch, a.target.EventID)
		if len(batch) >= markBatch || time.Since(lastMark) >= markEvery {
			if err := mark(); err != nil {
				return err
			}
		}
	}
	return mark()
}

func (s *session) awaitAck(ctx context.Context, pub jetstream.JetStream, a pendingAck) (*jetstream.PubAck, error) {
	var err error
	select {
	case ack := <-a.future.Ok():
		return ack, nil
	case err = <-a.future.Err():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for attempt := 1; attempt <= publishRetries; attempt++ {
		select {
		case <-time.After(time.Duration(attempt) * time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		pctx, cancel := context.WithTimeout(ctx, publishAckTimeout)
		var ack *jetstream.PubAck
		ack, err = pub.PublishMsg(pctx, a.msg)
		cancel()
		if err == nil {
			return ack, nil
		}
	}
	return nil, fmt.Errorf("publish event %s of job %s to %s failed %d times, last: %w; nothing is lost: run execute again to continue",
		a.target.EventID, s.job.ID, a.target.OriginalSubject, publishRetries+1, err)
}
