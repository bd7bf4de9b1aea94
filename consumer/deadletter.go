package consumer

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
)

// deadLetterTimeout bounds the wait for the DLQ stream's publish ack.
const deadLetterTimeout = 10 * time.Second

// replayHeaders travel with a dead-lettered replay, so the DLQ shows which job it failed under.
var replayHeaders = []string{protocol.HeaderReplayJob, protocol.HeaderReplayMode,
	protocol.HeaderReplayEffectVersion, protocol.HeaderReplayWriteForbidden}

// deadLetter publishes the message to DLQSubject and, once the DLQ stream acknowledged it, acks
// the source. If the publish fails the source is nakked instead, so the message is never lost.
func (c *Consumer) deadLetter(ctx context.Context, d *delivery, out Outcome) Outcome {
	if err := c.publishDeadLetter(ctx, d, out.Err); err != nil {
		// Said where an operator looks: the log, and an incident ledger stats counts; the event
		// is redelivered until the DLQ takes it, never dropped.
		c.log.Error("consumer: the DLQ refused a dead letter; the event is redelivered until it takes it",
			"consumer", c.cfg.Name, "event_id", d.ev.ID, "dlq_subject", c.cfg.DLQSubject, "err", err, "failed_with", out.Err)
		if d.ev.ID != "" {
			_ = c.cfg.Store.EffectIncidentsInsert(ctx, ledger.EffectIncident{Consumer: c.cfg.Name, EventID: d.ev.ID,
				EffectVersion: d.ev.EffectVersion, Kind: ledger.IncidentDeadLetterRefused, DedupKey: fmt.Sprintf("dlq@%d", d.seq)})
		}
		return c.retry(d, out, fmt.Errorf("could not dead-letter event %q: the DLQ stream refused it on %s (%w); it is redelivered until the DLQ takes it; it failed with: %v",
			d.ev.ID, c.cfg.DLQSubject, err, out.Err))
	}
	c.failReplayTarget(ctx, d, out)
	c.ack(d)
	return out
}

// failReplayTarget records a replay the SDK dead-lettered as a failed target of its job, with
// why: the replay was tried and given up on, a terminal outcome like a business failure. Without
// it the target's row stays received with nothing left to deliver it, and the job waits for it
// until its settle timeout on every execute, for ever. A failed write is logged: the job then
// stalls as before, and its stall message asks whether the consumer dead-lettered its targets.
func (c *Consumer) failReplayTarget(ctx context.Context, d *delivery, out Outcome) {
	if d.ev.Mode != ModeReplay || d.ev.JobID == "" || d.ev.ID == "" {
		return
	}
	detail := fmt.Sprintf("dead-lettered again by %s after %d deliveries: %s", c.cfg.Name, d.ev.Delivery,
		clip.Stored(reasonClass(out.Err), dlq.MaxClassBytes))
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deadLetterTimeout)
	defer cancel()
	if _, err := c.cfg.Store.JobTargetsSetOutcome(wctx, d.ev.JobID, ledger.TargetFailed,
		[]ledger.TargetOutcome{{EventID: d.ev.ID, Detail: detail}}); err != nil {
		c.log.Warn("consumer: recording a dead-lettered replay as its job's failed target failed", "consumer", c.cfg.Name,
			"event_id", d.ev.ID, "job", d.ev.JobID, "error", err)
	}
}

func (c *Consumer) publishDeadLetter(ctx context.Context, d *delivery, reason error) error {
	src := d.msg.Headers()
	carried := nats.Header{}
	for _, h := range replayHeaders {
		if v := src.Get(h); v != "" {
			carried.Set(h, v)
		}
	}
	deadLetterTrace(ctx, src, carried)
	m := dlq.DeadLetter{
		Subject: c.cfg.DLQSubject, EventID: src.Get(protocol.HeaderEventID), OriginalSubject: d.msg.Subject(),
		Class:    clip.Stored(reasonClass(reason), dlq.MaxClassBytes),
		Detail:   clip.Stored(reason.Error(), dlq.MaxDetailBytes),
		Attempts: d.ev.Delivery, FailedAt: time.Now(), Payload: d.msg.Data(), Carried: carried,
	}.Msg()
	// The stream sequence keeps two copies of one event apart in the DLQ, while a retried
	// dead-lettering of the same copy is deduplicated.
	m.Header.Set(protocol.HeaderMsgID, fmt.Sprintf("dlq:%s:%s:%d", c.cfg.Name, src.Get(protocol.HeaderEventID), d.seq))
	pctx, cancel := context.WithTimeout(ctx, deadLetterTimeout)
	defer cancel()
	_, err := c.js.PublishMsg(pctx, m)
	return err
}
