package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// ErrConsumeStopped means Run stopped consuming for a reason it cannot ride through: the NATS
// connection closed for good, the stream is gone, or the server refused the durable. The message
// names the stream, the durable and what to do.
var ErrConsumeStopped = errors.New("consuming stopped")

// MetricPullInterruptions counts what interrupted Run's pull iterator, by reason; Run rode
// through each of them (docs/reliability.md).
const MetricPullInterruptions = "consumer_pull_interruptions_total"

// Reasons of MetricPullInterruptions.
const (
	interruptMissedHeartbeat = "missed_heartbeat" // no heartbeat for 2x the pull heartbeat
	interruptLeaderChange    = "leader_change"    // the durable's leader moved; pending pulls are void
	interruptIteratorClosed  = "iterator_closed"  // the iterator ended without Run asking: re-created
	interruptDurableGone     = "durable_gone"     // the durable was deleted or not found: re-created
	interruptReopenFailed    = "reopen_failed"    // one failed attempt to re-create durable and iterator
)

const (
	// pullExpiry is how long one pull request waits on the server. Its heartbeat is half of it, and
	// a pull lost with a server or a leader is noticed after two missed heartbeats, 10 s.
	pullExpiry = 10 * time.Second
	// reopenBackoff is the first wait before re-creating the iterator, doubled per consecutive
	// interruption up to maxReopenBackoff, and back to the first after a message arrives.
	reopenBackoff    = 100 * time.Millisecond
	maxReopenBackoff = 5 * time.Second
)

// newInterruptions builds the interruption counter, labelled consumer=name, and registers it on
// reg unless it is nil.
func newInterruptions(name string, reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        MetricPullInterruptions,
		Help:        "Interruptions of the consumer's pull iterator (missed heartbeats, leader changes, re-created iterators) that Run rode through.",
		ConstLabels: prometheus.Labels{"consumer": name},
	}, []string{"reason"})
	if reg == nil {
		return v, nil
	}
	if err := reg.Register(v); err != nil {
		return nil, fmt.Errorf("%w: Metrics: register %s of consumer %s: %w", ErrBadConfig, MetricPullInterruptions, name, err)
	}
	return v, nil
}

// pull is Run's iterator over the durable, re-created when an interruption ends it.
type pull struct {
	c    *Consumer
	iter jetstream.MessagesContext
	// streak counts interruptions since the last message; it sets the re-create backoff.
	streak int
}

// startPull opens the first iterator over cons.
func (c *Consumer) startPull(cons jetstream.Consumer) (*pull, error) {
	iter, err := c.messages(cons)
	if err != nil {
		return nil, err
	}
	return &pull{c: c, iter: iter}, nil
}

func (c *Consumer) messages(cons jetstream.Consumer) (jetstream.MessagesContext, error) {
	// A small pull keeps messages from waiting in this client, unacked, while others handle them.
	iter, err := cons.Messages(jetstream.PullMaxMessages(c.cfg.Concurrency), jetstream.PullExpiry(pullExpiry))
	if err != nil {
		return nil, fmt.Errorf("consume stream %s as %s: open the pull iterator: %w", c.cfg.Stream, c.cfg.Durable, err)
	}
	return iter, nil
}

// next returns the next message, riding through what the iterator recovers from and re-creating
// it when an interruption closed it. It returns nil, nil once ctx is done, and an error matching
// ErrConsumeStopped when consuming cannot go on.
func (p *pull) next(ctx context.Context) (jetstream.Msg, error) {
	for {
		msg, err := p.iter.Next(jetstream.NextContext(ctx))
		if err == nil {
			p.streak = 0
			return msg, nil
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		if err := p.c.fatal(err); err != nil {
			return nil, err
		}
		reason, reopen := interruption(err)
		p.interrupted(reason, err)
		if !reopen {
			continue
		}
		p.iter.Stop()
		if err := p.reopen(ctx); err != nil || ctx.Err() != nil {
			return nil, err
		}
	}
}

// interruption names what err from the iterator was and whether the iterator is closed by it.
// A missed heartbeat or a leader change leaves the iterator running: it issues a new pull itself.
func interruption(err error) (reason string, reopen bool) {
	switch {
	case errors.Is(err, jetstream.ErrNoHeartbeat):
		return interruptMissedHeartbeat, false
	case errors.Is(err, jetstream.ErrConsumerLeadershipChanged):
		return interruptLeaderChange, false
	case errors.Is(err, jetstream.ErrConsumerDeleted), errors.Is(err, jetstream.ErrConsumerNotFound):
		return interruptDurableGone, true
	default:
		return interruptIteratorClosed, true
	}
}

func (p *pull) interrupted(reason string, err error) {
	p.streak++
	p.c.interruptions.WithLabelValues(reason).Inc()
	p.c.log.Warn("consume interrupted, going on", "stream", p.c.cfg.Stream, "durable", p.c.cfg.Durable,
		"reason", reason, "error", err.Error(), "consecutive", p.streak)
}

// reopen re-creates the durable (it may have been deleted, or lost with a server) and the
// iterator, with backoff, until it works, ctx is done, or a failure is fatal.
func (p *pull) reopen(ctx context.Context) error {
	c := p.c
	for {
		wait := min(reopenBackoff<<min(p.streak-1, 10), maxReopenBackoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		cons, err := c.EnsureDurable(ctx)
		var iter jetstream.MessagesContext
		if err == nil {
			iter, err = c.messages(cons)
		}
		if err == nil {
			p.iter = iter
			c.log.Info("consume resumed", "stream", c.cfg.Stream, "durable", c.cfg.Durable, "consecutive", p.streak)
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if err := c.fatal(err); err != nil {
			return err
		}
		p.interrupted(interruptReopenFailed, err)
	}
}

// fatal returns err named and matching ErrConsumeStopped when no retry can fix it, nil otherwise.
func (c *Consumer) fatal(err error) error {
	var what string
	switch {
	case c.cfg.Conn.IsClosed(), errors.Is(err, jetstream.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionClosed):
		what = "the NATS connection is closed (Conn.Close was called, or its reconnect attempts ran out): " +
			"restart the consumer, and connect with nats.MaxReconnects(-1) so an outage is ridden through"
	case errors.Is(err, jetstream.ErrStreamNotFound):
		what = "the stream does not exist: create it, or fix Config.Stream"
	case errors.Is(err, jetstream.ErrBadRequest), errors.Is(err, jetstream.ErrInvalidOption):
		what = "the server refused the durable's pull request as malformed: check Config (Durable, FilterSubject) against the stream"
	case errors.Is(err, nats.ErrPermissionViolation), errors.Is(err, nats.ErrAuthorization):
		what = "the NATS user may not consume this durable: grant it the JetStream API and the stream's subjects (docs/operations.md)"
	default:
		return nil
	}
	return fmt.Errorf("%w: consume stream %s as %s: %s: %w", ErrConsumeStopped, c.cfg.Stream, c.cfg.Durable, what, err)
}
