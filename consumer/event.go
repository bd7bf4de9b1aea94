package consumer

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/protocol"
)

// Mode is how a handler invocation may touch the outside world.
type Mode string

// Modes a handler runs in.
const (
	ModeLive   Mode = "live"   // a live message from the stream
	ModeReplay Mode = "replay" // a message replayed by `replayctl execute` (carries Replay-Job)
	ModeShadow Mode = "shadow" // a shadow request: no external write, no ledger write
)

// Event is one message as the handler sees it.
type Event struct {
	ID      string // Event-Id header
	Subject string
	Payload []byte
	Header  nats.Header
	Mode    Mode
	// JobID is Replay-Job (replay and shadow).
	JobID string
	// EffectVersion is Config.LiveVersion for live messages, Replay-Effect-Version otherwise.
	EffectVersion int
	// WriteForbidden is Replay-Write-Forbidden: true. Effects.Call then records calls without
	// making them; the handler need not check it.
	WriteForbidden bool
	// Delivery is the JetStream delivery count (1 for shadow).
	Delivery int
}

// Result is a handler's outcome: Body is JSON-encoded, stored as result_body and hashed
// (fingerprint.Payload over its JSON) as result_hash.
type Result struct{ Body any }

// Handler processes one event. Return Business(err) for a terminal business outcome (stored as
// the result: the event is done); any other error is transient (retried, then dead-lettered).
type Handler func(ctx context.Context, ev Event, fx *Effects) (Result, error)

// streamEvent reads a JetStream message's headers. A message with Replay-Job is a replay and must
// say which effect version it runs under; Replay-Mode shadow belongs to request/reply only.
func streamEvent(subject string, data []byte, h nats.Header, liveVersion, delivery int) (Event, error) {
	ev := Event{ID: h.Get(protocol.HeaderEventID), Subject: subject, Payload: data, Header: h,
		Mode: ModeLive, EffectVersion: liveVersion, Delivery: delivery}
	if err := protocol.ValidateEventID(ev.ID); err != nil {
		return ev, fmt.Errorf("%w: %s header: %w; the producer must set a stable event ID", ErrInvalidMessage, protocol.HeaderEventID, err)
	}
	job := h.Get(protocol.HeaderReplayJob)
	if job == "" {
		return ev, nil
	}
	ev.Mode, ev.JobID = ModeReplay, job
	if mode := h.Get(protocol.HeaderReplayMode); mode != "" && mode != protocol.ModeExecute {
		return ev, fmt.Errorf("%w: event %q of job %q: %s is %q on a stream message; only %q is published, shadow goes by request/reply",
			ErrInvalidMessage, ev.ID, clip.Stored(job, 64), protocol.HeaderReplayMode, clip.Stored(mode, 32), protocol.ModeExecute)
	}
	return withReplayVersion(ev, h)
}

// shadowEvent reads a shadow request's headers, which must all be present.
func shadowEvent(msg *nats.Msg) (Event, error) {
	h := msg.Header
	ev := Event{ID: h.Get(protocol.HeaderEventID), Subject: msg.Subject, Payload: msg.Data, Header: h,
		Mode: ModeShadow, JobID: h.Get(protocol.HeaderReplayJob), Delivery: 1}
	if err := protocol.ValidateEventID(ev.ID); err != nil {
		return ev, fmt.Errorf("%w: %s header: %w", ErrInvalidMessage, protocol.HeaderEventID, err)
	}
	if mode := h.Get(protocol.HeaderReplayMode); mode != protocol.ModeShadow {
		return ev, fmt.Errorf("%w: event %q: %s is %q, a shadow request needs %q", ErrInvalidMessage, ev.ID,
			protocol.HeaderReplayMode, clip.Stored(mode, 32), protocol.ModeShadow)
	}
	if ev.JobID == "" {
		return ev, fmt.Errorf("%w: event %q: the shadow request has no %s header", ErrInvalidMessage, ev.ID, protocol.HeaderReplayJob)
	}
	return withReplayVersion(ev, h)
}

// withReplayVersion reads the headers a replay and a shadow request share. A job ID or version
// the ledger cannot hold is refused here: the registry look-up would otherwise fail, and the
// message be retried, on every delivery.
func withReplayVersion(ev Event, h nats.Header) (Event, error) {
	if err := protocol.ValidateJobID(ev.JobID); err != nil {
		return ev, fmt.Errorf("%w: event %q: %s header: %w", ErrInvalidMessage, ev.ID, protocol.HeaderReplayJob, err)
	}
	v, err := protocol.ParseEffectVersion(h.Get(protocol.HeaderReplayEffectVersion))
	if err != nil {
		return ev, fmt.Errorf("%w: event %q of job %s: %w", ErrInvalidMessage, ev.ID, ev.JobID, err)
	}
	ev.EffectVersion = v
	if ev.WriteForbidden, err = protocol.ParseWriteForbidden(h.Get(protocol.HeaderReplayWriteForbidden)); err != nil {
		return ev, fmt.Errorf("%w: event %q of job %s: %w", ErrInvalidMessage, ev.ID, ev.JobID, err)
	}
	return ev, nil
}
