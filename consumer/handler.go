package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/every"
	"github.com/replayctl/replayctl/ledger"
)

// errHandlerPanicked is transient: a panic is a bug, and a fixed handler may succeed on a retry
// or a replay.
var errHandlerPanicked = errors.New("handler panicked")

// runHandler calls the handler, turning a panic into an error so one bad message cannot crash
// the service.
func (c *Consumer) runHandler(ctx context.Context, ev Event, fx *Effects) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("handler panicked", "consumer", c.cfg.Name, "event_id", ev.ID, "mode", string(ev.Mode),
				"panic", clip.Stored(fmt.Sprint(r), maxReasonBytes), "stack", string(debug.Stack()))
			err = fmt.Errorf("%w on event %q: %s", errHandlerPanicked, ev.ID, clip.Stored(fmt.Sprint(r), maxReasonBytes))
		}
	}()
	return c.cfg.Handler(ctx, ev, fx)
}

// heartbeat extends the lease and the message's ack deadline every Heartbeat until stop is
// called. When the lease is found to be someone else's it cancels the handler with ErrLeaseLost.
// A failed heartbeat query is only logged: the lease may still be ours, and Effects.Call checks it
// before every call anyway.
func (c *Consumer) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, key ledger.EffectKey, owner string, msg jetstream.Msg) (stop func()) {
	return every.Interval(ctx, c.cfg.Heartbeat, func() bool {
		qctx, qcancel := context.WithTimeout(ctx, c.cfg.Heartbeat)
		ok, err := c.cfg.Store.EffectsHeartbeat(qctx, key, owner, c.cfg.Lease)
		qcancel()
		switch {
		case err != nil:
			c.log.Warn("lease heartbeat failed", "consumer", c.cfg.Name, "event_id", key.EventID, "error", err)
		case !ok:
			traceEvent(ctx, "lease lapsed", "the lease was lost while the handler ran")
			cancel(fmt.Errorf("%w: %s is no longer held by %s", ErrLeaseLost, key, owner))
			return false
		}
		if err := msg.InProgress(); err != nil {
			c.log.Warn("extending the ack deadline failed", "consumer", c.cfg.Name, "event_id", key.EventID, "error", err)
		}
		return true
	})
}

// encodeResult returns the JSON stored as result_body and its hash. A business failure is stored
// as {"error": "<message>"} so shadow and ledger compare it the same way.
func encodeResult(res Result, herr error) (body json.RawMessage, hash string, err error) {
	if herr != nil {
		body, err = json.Marshal(map[string]string{"error": herr.Error()})
	} else {
		body, err = json.Marshal(res.Body)
	}
	if err != nil {
		return nil, "", fmt.Errorf("encode the handler's result as JSON: %w", err)
	}
	return body, fingerprint.Payload(body), nil
}
