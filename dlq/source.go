// Reading the DLQ messages a job's targets were planned from, proving each is still the planned
// event with the planned payload: shadow and execute send exactly what plan saw.

package dlq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/manifest"
)

// StallTimeout ends a forward read whose ordered consumer stops receiving messages while the
// stream still reports pending ones, instead of hanging a runbook.
const StallTimeout = 30 * time.Second

// Message is a target's DLQ message: its payload and headers.
type Message struct {
	Data   []byte
	Header nats.Header
}

func deleted(t Planned, stream string) string {
	return fmt.Sprintf("the DLQ message at stream sequence %d of %s was deleted since plan", t.StreamSeq, stream)
}

// Fetch reads one target's DLQ message with a stream get, for targets scattered over the stream.
// It returns the message, or why there is none (deleted or changed).
func Fetch(ctx context.Context, stream jetstream.Stream, m *manifest.Manifest, t Planned) (Message, string, error) {
	msg, err := stream.GetMsg(ctx, t.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Message{}, deleted(t, m.Source.Stream), nil
	}
	if err != nil {
		return Message{}, "", fmt.Errorf("read the DLQ message of event %s at stream sequence %d of %s: %w", t.EventID, t.StreamSeq, m.Source.Stream, err)
	}
	if why := Check(t, m.Source.Headers.EventID, msg.Header, msg.Data); why != "" {
		return Message{}, why, nil
	}
	return Message{Data: msg.Data, Header: msg.Header}, "", nil
}

// Reader reads the DLQ stream forward with an ordered consumer and hands out the message at each
// target's sequence, asked for in increasing order: a merge join of targets (paged by sequence)
// with the stream, holding one consumer batch at a time.
type Reader struct {
	ctx     context.Context
	m       *manifest.Manifest
	iter    jetstream.MessagesContext
	unwatch func() bool
	// head is the next message not yet matched to a target; done means no message follows it.
	head    jetstream.Msg
	headSeq uint64
	done    bool
}

// Open starts reading m's DLQ stream at startSeq, within the plan's subject filter, up to batch
// messages per pull (fewer for large messages, see PullBatch).
func Open(ctx context.Context, js jetstream.JetStream, m *manifest.Manifest, startSeq uint64, batch int) (*Reader, error) {
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: startSeq}
	if m.Source.SubjectFilter != "" {
		cfg.FilterSubjects = []string{m.Source.SubjectFilter}
	}
	stream, err := js.Stream(ctx, m.Source.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("the DLQ stream %s of job %s no longer exists: its targets cannot be shadowed or replayed", m.Source.Stream, m.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("read DLQ stream %s: %w", m.Source.Stream, err)
	}
	cons, err := stream.OrderedConsumer(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("read DLQ stream %s: create ordered consumer: %w", m.Source.Stream, err)
	}
	iter, err := cons.Messages(jetstream.PullMaxMessages(PullBatch(stream.CachedInfo().State, batch)))
	if err != nil {
		return nil, fmt.Errorf("read DLQ stream %s: %w", m.Source.Stream, err)
	}
	r := &Reader{ctx: ctx, m: m, iter: iter,
		// Next cannot take a context; stopping the iterator on cancellation ends a wait at once.
		unwatch: context.AfterFunc(ctx, iter.Stop)}
	if ci := cons.CachedInfo(); ci == nil || ci.NumPending == 0 {
		r.done = true
	}
	return r, nil
}

// Next returns target t's message, or why there is none (deleted or changed message). Targets
// must be asked for in increasing stream sequence.
func (r *Reader) Next(t Planned) (Message, string, error) {
	for {
		if r.head == nil {
			if r.done {
				return Message{}, deleted(t, r.m.Source.Stream), nil
			}
			if err := r.advance(); err != nil {
				return Message{}, "", err
			}
			continue
		}
		switch {
		case r.headSeq < t.StreamSeq: // a message that is not a target
			r.head = nil
		case r.headSeq == t.StreamSeq:
			msg := r.head
			r.head = nil
			if why := Check(t, r.m.Source.Headers.EventID, msg.Headers(), msg.Data()); why != "" {
				return Message{}, why, nil
			}
			return Message{Data: msg.Data(), Header: msg.Headers()}, "", nil
		default: // the consumer skipped t's sequence: the message is gone
			return Message{}, deleted(t, r.m.Source.Stream), nil
		}
	}
}

func (r *Reader) advance() error {
	msg, err := r.iter.Next(jetstream.NextMaxWait(StallTimeout))
	if err != nil {
		r.done = true
		switch {
		case r.ctx.Err() != nil:
			return r.ctx.Err()
		case errors.Is(err, nats.ErrTimeout):
			return fmt.Errorf("reading DLQ stream %s stalled: no message for %s; check the NATS server and run the command again", r.m.Source.Stream, StallTimeout)
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
	// read must not keep it going.
	if meta.NumPending == 0 || r.headSeq >= r.m.Source.LastSeq {
		r.done = true
	}
	return nil
}

// Close stops the read.
func (r *Reader) Close() {
	r.unwatch()
	r.iter.Stop()
}
