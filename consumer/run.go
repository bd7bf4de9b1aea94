package consumer

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// EnsureDurable creates or updates the durable pull consumer on Stream. MaxDeliver is unlimited on
// the server because the SDK counts deliveries itself and dead-letters with the payload intact; the
// ack wait is twice the heartbeat, which also extends it while a handler runs.
func (c *Consumer) EnsureDurable(ctx context.Context) (jetstream.Consumer, error) {
	if c.cfg.Stream == "" {
		return nil, fmt.Errorf("%w: Stream: required to consume messages", ErrBadConfig)
	}
	cons, err := c.js.CreateOrUpdateConsumer(ctx, c.cfg.Stream, jetstream.ConsumerConfig{
		Durable:       c.cfg.Durable,
		FilterSubject: c.cfg.FilterSubject,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       2 * c.cfg.Heartbeat,
		MaxDeliver:    -1,
	})
	if err != nil {
		return nil, fmt.Errorf("create or update durable consumer %s on stream %s: %w", c.cfg.Durable, c.cfg.Stream, err)
	}
	return cons, nil
}

// Run creates or updates the durable pull consumer (AckPolicy explicit, server MaxDeliver -1
// because the SDK counts deliveries itself, AckWait 2x Heartbeat) and processes messages, up to
// Concurrency at once, until ctx is done; it returns nil on cancellation. Messages already being
// handled finish first, under a context that is not cancelled: cutting an external call short
// would leave its event uncertain. With Config.Lookup set, Run also answers look-ups
// (ServeLookup) and runs the reconcile worker (ReconcileUncertain every ReconcileInterval) while
// it runs. It adds what it counted to the ledger's daily delivery counts every
// CountsInterval, and once more before it returns (FlushCounts).
//
// Run rides through missed heartbeats, reconnects, leader changes and a deleted durable: each is
// logged and counted (MetricPullInterruptions), and a closed iterator is re-created with backoff
// (run_recover.go). Besides a bad Config or a failure before the first message, it returns only an
// error matching ErrConsumeStopped, which names what to do.
func (c *Consumer) Run(ctx context.Context) error {
	var missing []string
	if c.cfg.Stream == "" {
		missing = append(missing, "Stream: required by Run")
	}
	if c.cfg.DLQSubject == "" {
		missing = append(missing, "DLQSubject: required by Run, where poison messages go")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrBadConfig, strings.Join(missing, "; "))
	}
	cons, err := c.EnsureDurable(ctx)
	if err != nil {
		return err
	}
	c.warnIfTermReasonIgnored()
	// Registered before the first message, so a plan made while this instance runs already
	// compares under its options.
	if err := c.fingerprints.register(ctx); err != nil {
		return err
	}
	if err := c.registerRetention(ctx); err != nil {
		return err
	}
	c.warnAboutReplication(ctx)
	stopCounting := c.startCounting(ctx)
	defer stopCounting()
	if c.cfg.Lookup != nil {
		stopLookup, err := c.ServeLookup(ctx)
		if err != nil {
			return err
		}
		defer stopLookup()
		defer c.startReconcileWorker(ctx)()
	}
	pull, err := c.startPull(cons)
	if err != nil {
		return err
	}
	defer func() { pull.iter.Stop() }()

	// Concurrency handlers live as long as Run, each taking the next message when it is free: a
	// goroutine started per message grew a fresh stack every time, which with hundreds of
	// handlers was a tenth of the consumer's CPU (docs/benchmarks.md).
	work := context.WithoutCancel(ctx)
	msgs := make(chan jetstream.Msg)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(msgs)
	for range c.cfg.Concurrency {
		wg.Go(func() {
			for msg := range msgs {
				c.Process(work, msg)
			}
		})
	}
	for {
		msg, err := pull.next(ctx)
		if err != nil || msg == nil {
			return err
		}
		msgs <- msg
	}
}
