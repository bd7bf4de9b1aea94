package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/protocol"
)

// subscribeTimeout bounds the round trip that confirms the subscription reached the server.
const subscribeTimeout = 5 * time.Second

// Shadow answers one shadow request: the handler runs in ModeShadow, every Effects.Call is
// recorded with Suppressed and fn is never called, nothing is written to the ledger. The handler
// gets ShadowTimeout at most. A business failure is status ok with the result the ledger would
// store ({"error": "<message>"}); a transient failure, a panic or bad headers are status error.
func (c *Consumer) Shadow(ctx context.Context, msg *nats.Msg) protocol.ShadowReply {
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
	subject := protocol.ShadowSubject(c.cfg.Name)
	// Requests in flight finish when ctx ends: their requester is waiting and nothing is written.
	work := context.WithoutCancel(ctx)
	slots := make(chan struct{}, c.cfg.ShadowConcurrency)
	var wg sync.WaitGroup
	sub, err := c.cfg.Conn.QueueSubscribe(subject, protocol.ShadowQueueGroup, func(msg *nats.Msg) {
		// Blocking here holds further requests in the subscription's buffer: backpressure.
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			c.answerShadow(work, msg)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe to shadow requests on %s: %w", subject, err)
	}
	closed := sub.StatusChanged(nats.SubscriptionClosed)
	// The subscription must reach the server before the first request is sent, or that request
	// finds no responder.
	if err := c.cfg.Conn.FlushTimeout(subscribeTimeout); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("subscribe to shadow requests on %s: %w", subject, err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			if err := sub.Drain(); err != nil {
				c.log.Warn("draining the shadow subscription failed", "consumer", c.cfg.Name, "error", err)
			} else {
				<-closed
			}
			wg.Wait()
		})
	}
	context.AfterFunc(ctx, stop)
	return stop, nil
}

func (c *Consumer) answerShadow(ctx context.Context, msg *nats.Msg) {
	reply := c.Shadow(ctx, msg)
	c.log.Info("shadow request answered", "consumer", c.cfg.Name, "event_id", reply.EventID, "status", reply.Status,
		"result_hash", reply.ResultHash, "calls", len(reply.Effects))
	data, err := json.Marshal(reply)
	if err == nil {
		err = msg.Respond(data)
	}
	if err != nil {
		c.log.Warn("shadow reply failed", "consumer", c.cfg.Name, "event_id", reply.EventID, "error", err)
	}
}
