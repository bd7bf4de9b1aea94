package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// subscribeTimeout bounds the round trip that confirms the subscription reached the server.
const subscribeTimeout = 5 * time.Second

// serveRequests answers requests on subject in queue group, up to concurrency at once, with
// answer, until ctx is done or the returned stop is called: the one loop of the shadow and
// look-up responders. stop drains the subscription, so requests already received are answered,
// waits for them, and may be called more than once.
func (c *Consumer) serveRequests(ctx context.Context, subject, group string, concurrency int, what string,
	answer func(context.Context, *nats.Msg)) (stop func(), err error) {
	// Requests in flight finish when ctx ends: their requester is waiting for the answer, and
	// neither responder writes anything.
	work := context.WithoutCancel(ctx)
	slots := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	sub, err := c.cfg.Conn.QueueSubscribe(subject, group, func(msg *nats.Msg) {
		// Blocking here holds further requests in the subscription's buffer: backpressure.
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			answer(work, msg)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe to %s requests on %s: %w", what, subject, err)
	}
	closed := sub.StatusChanged(nats.SubscriptionClosed)
	// The subscription must reach the server before the first request is sent, or that request
	// finds no responder.
	if err := c.cfg.Conn.FlushTimeout(subscribeTimeout); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("subscribe to %s requests on %s: %w", what, subject, err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			if err := sub.Drain(); err != nil {
				c.log.Warn("draining a subscription failed", "consumer", c.cfg.Name, "subject", subject, "error", err)
			} else {
				<-closed
			}
			wg.Wait()
		})
	}
	context.AfterFunc(ctx, stop)
	return stop, nil
}

// respond sends reply as JSON to msg's requester, logging a failure: the requester times out.
func (c *Consumer) respond(msg *nats.Msg, what, eventID string, reply any) {
	data, err := json.Marshal(reply)
	if err == nil {
		err = msg.Respond(data)
	}
	if err != nil {
		c.log.Warn(what+" reply failed", "consumer", c.cfg.Name, "event_id", eventID, "error", err)
	}
}
