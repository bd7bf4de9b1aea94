package shadow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/protocol"
)

// Target statuses as job_targets stores them.
const (
	statusOK            = "ok"
	statusError         = "error"
	statusTimeout       = "timeout"
	statusNoResponder   = "no_responder"
	statusSourceMissing = "source_missing"
	// statusRefused: NATS would not send the request (it exceeds the server's max_payload).
	statusRefused = "refused"
)

// maxStoredError bounds a responder's error message as stored and reported: it is the
// consumer's text, and may quote more of the request than an operator should see.
const maxStoredError = 300

// answer is what one shadow request came back with.
type answer struct {
	// status is ok, error, timeout, no_responder or refused.
	status string
	// result is the reply's result body (nil when the reply gave only a hash); resultHash is
	// fingerprint.Payload(result), or the reply's hash when it sent no body.
	result     json.RawMessage
	resultHash string
	effects    []protocol.Effect
	err        string
}

// refused reports whether NATS would not send the request at all. Only that request fails: it is
// not a broken connection, and another target's request still goes.
func refused(err error) bool {
	return errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadHeaderMsg)
}

func (a *answer) replied() bool { return a.status == statusOK || a.status == statusError }

// requester sends shadow requests for one job.
type requester struct {
	nc             *nats.Conn
	subject        string
	jobID          string
	writeForbidden bool
	timeout        time.Duration
	// traced: a tracer provider that exports is installed, so each request gets a span.
	traced bool
}

// ask sends one shadow request for eventID under version and classifies what comes back. It
// returns an error only when the pass cannot go on: ctx ended, or the connection failed.
func (r *requester) ask(ctx context.Context, eventID string, version int, payload []byte) (*answer, error) {
	msg := nats.NewMsg(r.subject)
	msg.Header.Set(protocol.HeaderReplayJob, r.jobID)
	msg.Header.Set(protocol.HeaderReplayMode, protocol.ModeShadow)
	msg.Header.Set(protocol.HeaderReplayEffectVersion, strconv.Itoa(version))
	msg.Header.Set(protocol.HeaderReplayWriteForbidden, protocol.FormatBool(r.writeForbidden))
	msg.Header.Set(protocol.HeaderEventID, eventID)
	msg.Data = payload
	span := r.startRequest(ctx, eventID, version, msg)
	a, err := r.send(ctx, eventID, payload, msg)
	endRequest(span, a, err)
	return a, err
}

func (r *requester) send(ctx context.Context, eventID string, payload []byte, msg *nats.Msg) (*answer, error) {
	reqCtx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	reply, err := r.nc.RequestMsgWithContext(reqCtx, msg)
	switch {
	case err == nil:
		return parseReply(eventID, reply.Data), nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case refused(err):
		return &answer{status: statusRefused, err: fmt.Sprintf("NATS refused to send the request (%d bytes of payload, max_payload %d): %v; "+
			"raise the server's max_payload or plan again, which keeps such messages out (overMaxPayload)", len(payload), r.nc.MaxPayload(), err)}, nil
	case errors.Is(err, nats.ErrNoResponders):
		return &answer{status: statusNoResponder, err: "no shadow responder is subscribed to " + r.subject}, nil
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return &answer{status: statusTimeout, err: fmt.Sprintf("no reply within %s", r.timeout)}, nil
	default:
		return nil, fmt.Errorf("shadow request for event %s on %s: %w", eventID, r.subject, err)
	}
}

// parseReply checks a reply against the protocol; a reply that breaks it is a shadow error, since
// its result cannot be trusted.
func parseReply(eventID string, data []byte) *answer {
	var rep protocol.ShadowReply
	if err := json.Unmarshal(data, &rep); err != nil {
		return &answer{status: statusError, err: "the reply is not a shadow reply (docs/protocol.md): " + clip.Runes(err.Error(), maxStoredError)}
	}
	a := &answer{effects: rep.Effects}
	bad := func(format string, args ...any) *answer {
		a.status, a.result, a.err = statusError, nil, fmt.Sprintf(format, args...)
		return a
	}
	if rep.EventID != eventID {
		return bad("the reply is for event %q, not %q: the responder mixed up requests", clip.Runes(rep.EventID, maxStoredError), eventID)
	}
	switch rep.Status {
	case protocol.StatusError:
		a.status, a.err = statusError, clip.Runes(rep.Error, maxStoredError)
		if a.err == "" {
			a.err = "the responder reported an error without a message"
		}
		return a
	case protocol.StatusOK:
	default:
		return bad("the reply has status %q; the protocol knows %q and %q", clip.Runes(rep.Status, maxStoredError), protocol.StatusOK, protocol.StatusError)
	}
	a.status = statusOK
	if len(rep.Result) == 0 {
		if rep.ResultHash == "" {
			return bad("the ok reply carries neither result nor resultHash")
		}
		a.resultHash = rep.ResultHash
		return a
	}
	a.result, a.resultHash = rep.Result, fingerprint.Payload(rep.Result)
	if rep.ResultHash != "" && rep.ResultHash != a.resultHash {
		return bad("the reply's resultHash %s is not the fingerprint of its result (%s)", clip.Runes(rep.ResultHash, maxStoredError), a.resultHash)
	}
	return a
}
