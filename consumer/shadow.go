package consumer

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/protocol"
)

// Shadow answers one shadow request: the handler runs in ModeShadow, every Effects.Call is
// recorded with Suppressed and fn is never called, nothing is written to the ledger. The handler
// gets ShadowTimeout at most. A business failure is status ok with the result the ledger would
// store ({"error": "<message>"}); a transient failure, a panic or bad headers are status error.
func (c *Consumer) Shadow(ctx context.Context, msg *nats.Msg) protocol.ShadowReply {
	ctx, span := c.startShadow(ctx, msg)
	reply := c.shadow(ctx, msg)
	endShadow(span, reply)
	return reply
}

func (c *Consumer) shadow(ctx context.Context, msg *nats.Msg) protocol.ShadowReply {
	reply := protocol.ShadowReply{EventID: msg.Header.Get(protocol.HeaderEventID), Effects: []protocol.Effect{}}
	ev, err := shadowEvent(msg)
	if err != nil {
		reply.Status, reply.Error = protocol.StatusError, err.Error()
		return reply
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ShadowTimeout)
	defer cancel()
	fx := &Effects{suppress: true}
	res, herr := c.runHandler(ctx, ev, fx)
	reply.Effects = fx.Recorded()
	if herr != nil && !IsBusiness(herr) {
		reply.Status, reply.Error = protocol.StatusError, clip.Stored(herr.Error(), maxLastErrorBytes)
		return reply
	}
	body, hash, err := encodeResult(res, herr)
	if err != nil {
		reply.Status, reply.Error = protocol.StatusError, err.Error()
		return reply
	}
	reply.Status, reply.Result, reply.ResultHash = protocol.StatusOK, body, hash
	return reply
}

// ServeShadow answers shadow requests on protocol.ShadowSubject(Name) in queue group
// protocol.ShadowQueueGroup, up to ShadowConcurrency at once, until ctx is done or the returned
// stop is called. stop drains the subscription, so requests already received are answered, and
// waits for them; it may be called more than once.
func (c *Consumer) ServeShadow(ctx context.Context) (stop func(), err error) {
	return c.serveRequests(ctx, protocol.ShadowSubject(c.cfg.Name), protocol.ShadowQueueGroup, c.cfg.ShadowConcurrency, "shadow",
		func(ctx context.Context, msg *nats.Msg) {
			reply := c.Shadow(ctx, msg)
			c.log.Info("shadow request answered", "consumer", c.cfg.Name, "event_id", reply.EventID, "status", reply.Status,
				"result_hash", reply.ResultHash, "calls", len(reply.Effects))
			c.respond(msg, "shadow", reply.EventID, reply)
		})
}
