package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/ledger"
)

const (
	// publishRetryFor bounds how long a failed publish keeps being retried, and how long the
	// publisher waits for a lost NATS connection, before the run stops (running execute again
	// continues). The client's own reconnects give up after about two minutes.
	publishRetryFor = time.Minute
	// retryEvery spaces the retry rounds; retryTick is how often collectAcks looks whether one is
	// due while no acknowledgement arrives.
	retryEvery = time.Second
	retryTick  = 100 * time.Millisecond
)

// retryQueue holds the publishes that failed (no acknowledgement within publishAckTimeout, a
// connection lost, JetStream not ready after a restart), to be retried together.
type retryQueue struct {
	failed []pendingAck
	// since is when the oldest publish still queued failed; lastErr the latest failure.
	since     time.Time
	lastErr   error
	lastRound time.Time
}

func (q *retryQueue) add(a pendingAck, err error) {
	if len(q.failed) == 0 {
		q.since = time.Now()
	}
	q.failed, q.lastErr = append(q.failed, a), err
}

// due reports whether a round should run now: publishes are queued, the last round is a second
// old, and NATS is connected (while it is down a round would only fail again).
func (q *retryQueue) due(nc *nats.Conn) bool {
	return len(q.failed) > 0 && time.Since(q.lastRound) >= retryEvery && nc.IsConnected()
}

// retriesExpired stops the run once a queued publish has failed for longer than publishRetryFor.
func (s *session) retriesExpired(q *retryQueue) error {
	if len(q.failed) == 0 || time.Since(q.since) <= publishRetryFor {
		return nil
	}
	first := q.failed[0].target
	return fmt.Errorf("publishing %d targets of job %s failed for %s (the first: event %s to %s), last: %w; "+
		"nothing is lost: run execute again to continue once NATS is reachable", len(q.failed), s.job.ID, publishRetryFor, first.EventID, first.OriginalSubject, q.lastErr)
}

// retryRound tries every queued publish again, at once. The ledger is asked first, in one query,
// which of them already have a row under the new version: their message reached the consumer and
// only the acknowledgement was lost. Those count as published and are not sent again, since once
// JetStream's dedup window (2 minutes by default) has passed a second publish is stored as a
// second copy. The others are published again with their Nats-Msg-Id, and their
// acknowledgements awaited together. It returns the targets now published and those NATS refused
// (their failures); the rest stay queued for the next round.
func (s *session) retryRound(ctx context.Context, pub jetstream.JetStream, q *retryQueue, st *runState) (published []string, refused []ledger.TargetOutcome, err error) {
	q.lastRound = time.Now()
	ids := make([]string, len(q.failed))
	for i, a := range q.failed {
		ids[i] = a.target.EventID
	}
	landed, err := s.store.EffectsEventsUnderVersion(ctx, s.job.Consumer, s.job.EffectVersionTo, ids)
	if err != nil {
		return nil, nil, err
	}
	inLedger := make(map[string]bool, len(landed))
	for _, id := range landed {
		inLedger[id] = true
	}
	var again []pendingAck
	for _, a := range q.failed {
		if inLedger[a.target.EventID] {
			published = append(published, a.target.EventID)
			st.acked.Add(1)
			st.landedUnacked.Add(1)
			continue
		}
		a.future, a.err = pub.PublishMsgAsync(a.msg)
		again = append(again, a)
	}
	var still []pendingAck
	for _, a := range again {
		ack, err := s.awaitAck(ctx, a)
		switch {
		case ctx.Err() != nil:
			return published, refused, ctx.Err()
		case err == nil:
			st.acked.Add(1)
			st.republished.Add(1)
			if ack.Duplicate {
				st.deduplicated.Add(1)
			}
			published = append(published, a.target.EventID)
		default:
			if why := s.refusal(a, err, st); why != "" {
				refused = append(refused, ledger.TargetOutcome{EventID: a.target.EventID, Detail: "not published: " + why})
				continue
			}
			still, q.lastErr = append(still, a), err
		}
	}
	q.failed = still
	return published, refused, nil
}

// waitConnected holds the publisher while the NATS connection is down: what it published then
// would wait in the client's buffer and, after an outage longer than publishAckTimeout, fail
// unacknowledged although much of it reaches the stream once the server is back. It calls
// beforeWait before it waits, and gives up after publishRetryFor.
func (s *session) waitConnected(ctx context.Context, beforeWait func()) error {
	nc := s.js.Conn()
	if !nc.IsConnected() {
		beforeWait()
	}
	for since := time.Now(); !nc.IsConnected(); {
		if nc.IsClosed() || time.Since(since) > publishRetryFor {
			return fmt.Errorf("publish the targets of job %s: the NATS connection is %s (lost for %s); nothing is lost: run execute again to continue once NATS is reachable",
				s.job.ID, nc.Status(), time.Since(since).Round(time.Second))
		}
		select {
		case <-time.After(blockedPoll):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// refusal says why NATS refused a's message itself, or "" when err is about the connection or
// the server's state (down, restarting, slow), which a later attempt may not meet. A refused
// message is refused again however often it is sent: it is its target's failure, not the run's.
// A message the server refused was counted as sent; it is no longer in flight.
func (s *session) refusal(a pendingAck, err error, st *runState) string {
	if a.refusal != "" {
		return a.refusal
	}
	why := publishRefusal(err, a.msg, s.js.Conn().MaxPayload())
	if why != "" {
		st.sent.Add(-1)
	}
	return why
}

// publishRefusal says why NATS refused msg for its own sake, or "".
func publishRefusal(err error, msg *nats.Msg, maxPayload int64) string {
	size := fmt.Sprintf("%d bytes: payload %d, subject and headers %d", msg.Size(), len(msg.Data), msg.Size()-len(msg.Data))
	switch {
	case errors.Is(err, nats.ErrMaxPayload):
		return fmt.Sprintf("the replay message (%s) exceeds the NATS server's max_payload of %d bytes (%v)", size, maxPayload, err)
	case errors.Is(err, jetstream.ErrStreamMessageExceedsMaximum):
		return fmt.Sprintf("the replay message (%s) exceeds the stream's max_msg_size (%v)", size, err)
	case errors.Is(err, nats.ErrBadSubject), errors.Is(err, nats.ErrBadHeaderMsg):
		return fmt.Sprintf("NATS refused the replay message: %v", err)
	}
	return ""
}
