package shadow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

// streamStallTimeout ends a full pass whose ordered consumer stops receiving messages while the
// stream still reports pending ones, instead of hanging a runbook.
const streamStallTimeout = 30 * time.Second

// checkSource says why msg cannot stand for target t (empty when it can): the stream sequence
// must still hold the planned event with the planned payload.
func checkSource(t ledger.ShadowTarget, eventIDHeader string, header nats.Header, data []byte) string {
	if got := header.Get(eventIDHeader); got != t.EventID {
		return fmt.Sprintf("the DLQ message at stream sequence %d carries %s %q, not %q: the stream was purged or recreated since plan; plan again",
			t.StreamSeq, eventIDHeader, clip(got), t.EventID)
	}
	if t.PayloadHash != "" {
		if got := fingerprint.Payload(data); got != t.PayloadHash {
			return fmt.Sprintf("the DLQ message at stream sequence %d changed since plan (payload %s, planned %s); plan again",
				t.StreamSeq, got, t.PayloadHash)
		}
	}
	return ""
}

func deletedMessage(t ledger.ShadowTarget, stream string) string {
	return fmt.Sprintf("the DLQ message at stream sequence %d of %s was deleted since plan", t.StreamSeq, stream)
}

// fetchOne reads one target's DLQ message with a stream get: the sample's few targets are
// scattered over the stream. It returns the payload, or why there is none.
func fetchOne(ctx context.Context, stream jetstream.Stream, m *manifest.Manifest, t ledger.ShadowTarget) ([]byte, string, error) {
	msg, err := stream.GetMsg(ctx, t.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, deletedMessage(t, m.Source.Stream), nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read the DLQ message of event %s at stream sequence %d of %s: %w", t.EventID, t.StreamSeq, m.Source.Stream, err)
	}
	if why := checkSource(t, m.Source.Headers.EventID, msg.Header, msg.Data); why != "" {
		return nil, why, nil
	}
	return msg.Data, "", nil
}

// dlqReader reads the DLQ stream forward with an ordered consumer and hands out the message at
// each target's sequence, asked for in increasing order: the full pass's merge join of targets
// (paged by sequence) with the stream, holding one consumer batch at a time.
type dlqReader struct {
	ctx     context.Context
	m       *manifest.Manifest
	iter    jetstream.MessagesContext
	unwatch func() bool
	// head is the next message not yet matched to a target; done means no message follows it.
	head    jetstream.Msg
	headSeq uint64
	done    bool
}

// openDLQ starts reading m's DLQ stream at startSeq, within the plan's subject filter.
func openDLQ(ctx context.Context, js jetstream.JetStream, m *manifest.Manifest, startSeq uint64, batch int) (*dlqReader, error) {
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: startSeq}
	if m.Source.SubjectFilter != "" {
		cfg.FilterSubjects = []string{m.Source.SubjectFilter}
	}
	cons, err := js.OrderedConsumer(ctx, m.Source.Stream, cfg)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("the DLQ stream %s of job %s no longer exists: its targets cannot be shadowed or replayed", m.Source.Stream, m.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("read DLQ stream %s: create ordered consumer: %w", m.Source.Stream, err)
	}
	iter, err := cons.Messages(jetstream.PullMaxMessages(batch))
	if err != nil {
		return nil, fmt.Errorf("read DLQ stream %s: %w", m.Source.Stream, err)
	}
	r := &dlqReader{ctx: ctx, m: m, iter: iter,
		// Next cannot take a context; stopping the iterator on cancellation ends a wait at once.
		unwatch: context.AfterFunc(ctx, iter.Stop)}
	if ci := cons.CachedInfo(); ci == nil || ci.NumPending == 0 {
		r.done = true
	}
	return r, nil
}

// payload returns target t's payload, or why there is none (deleted or changed message).
func (r *dlqReader) payload(t ledger.ShadowTarget) ([]byte, string, error) {
	for {
		if r.head == nil {
			if r.done {
				return nil, deletedMessage(t, r.m.Source.Stream), nil
			}
			if err := r.advance(); err != nil {
				return nil, "", err
			}
			continue
		}
		switch {
		case r.headSeq < t.StreamSeq: // a message that is not a target
			r.head = nil
		case r.headSeq == t.StreamSeq:
			msg := r.head
			r.head = nil
			if why := checkSource(t, r.m.Source.Headers.EventID, msg.Headers(), msg.Data()); why != "" {
				return nil, why, nil
			}
			return msg.Data(), "", nil
		default: // the consumer skipped t's sequence: the message is gone
			return nil, deletedMessage(t, r.m.Source.Stream), nil
		}
	}
}

func (r *dlqReader) advance() error {
	msg, err := r.iter.Next(jetstream.NextMaxWait(streamStallTimeout))
	if err != nil {
		r.done = true
		switch {
		case r.ctx.Err() != nil:
			return r.ctx.Err()
		case errors.Is(err, nats.ErrTimeout):
			return fmt.Errorf("reading DLQ stream %s stalled: no message for %s; check the NATS server and run shadow again", r.m.Source.Stream, streamStallTimeout)
		default:
			return fmt.Errorf("read DLQ stream %s: %w", r.m.Source.Stream, err)
		}
	}
	meta, err := msg.Metadata()
	if err != nil {
		r.done = true
		return fmt.Errorf("read DLQ stream %s: message metadata: %w", r.m.Source.Stream, err)
	}
	r.head, r.headSeq = msg, meta.Sequence.Stream
	// Past the plan's last scanned message nothing can be a target, and a stream growing under the
	// pass must not keep it reading.
	if meta.NumPending == 0 || r.headSeq >= r.m.Source.LastSeq {
		r.done = true
	}
	return nil
}

func (r *dlqReader) close() {
	r.unwatch()
	r.iter.Stop()
}
