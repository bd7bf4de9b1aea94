package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/seal"
)

// minInProgressDelay keeps a message whose lease is about to lapse from bouncing straight back.
const minInProgressDelay = 100 * time.Millisecond

// delivery is one message being processed.
type delivery struct {
	msg jetstream.Msg
	ev  Event
	seq uint64 // stream sequence, part of the dead-letter's Nats-Msg-Id
	// storedAt is when the stream stored the message: an event without a ledger row whose message
	// is older than the evidence retention may have had its row pruned.
	storedAt time.Time
	// anyVersionSettles: the event is done once any version settled it for real (a live message,
	// a DLQ replay); a backfill re-processes what older versions completed.
	anyVersionSettles bool
	// owner names this handling on the lease it claims: the instance and a sequence number
	// (leaseOwner). Two handlings of one event in one process (a redelivery while the first still
	// runs) must not pass for each other's lease.
	owner string
}

// Process handles one message end to end (ledger, handler, ack/nak/term, dead-letter) and says what
// happened. Run calls it; tests call it directly with messages fetched from a consumer. The ledger,
// not the ack, is the record: an ack lost in transit makes the redelivery a Duplicate.
func (c *Consumer) Process(ctx context.Context, msg jetstream.Msg) Outcome {
	ctx, span := c.startDelivery(ctx, msg)
	d, out := c.process(ctx, msg)
	c.meters.delivered(out.Kind)
	c.logOutcome(ctx, out, d.ev)
	c.endDelivery(span, d, out)
	return out
}

func (c *Consumer) process(ctx context.Context, msg jetstream.Msg) (*delivery, Outcome) {
	d := &delivery{msg: msg, owner: c.leaseOwner()}
	meta, err := msg.Metadata()
	if err != nil {
		return d, Outcome{Kind: OutcomeInvalid, Err: fmt.Errorf("%w: not a JetStream delivery: %w", ErrInvalidMessage, err)}
	}
	d.seq, d.storedAt = meta.Sequence.Stream, meta.Timestamp
	d.ev, err = streamEvent(msg.Subject(), msg.Data(), msg.Headers(), c.cfg.LiveVersion, int(meta.NumDelivered))
	out := Outcome{EventID: d.ev.ID, EffectVersion: d.ev.EffectVersion}
	if c.cfg.DLQSubject == "" {
		return d, c.retry(d, out, fmt.Errorf("%w: DLQSubject is required to process stream messages", ErrBadConfig))
	}
	if err != nil {
		// The version was not established, so none is reported.
		out.Kind, out.EffectVersion, out.Err = OutcomeInvalid, 0, err
		return d, c.deadLetter(ctx, d, out)
	}
	d.anyVersionSettles = d.ev.Mode == ModeLive
	if d.ev.Mode == ModeReplay {
		ok, kind, err := c.replayAllowed(ctx, d.ev)
		if err != nil {
			return d, c.retry(d, out, err)
		}
		// A DLQ job targets only events no version completed, but a job cancelled a moment ago
		// may still complete one (the registry answer is cached): its replay must not run again.
		d.anyVersionSettles = kind != jobtype.SourceBackfill
		if !ok {
			out.Kind = OutcomeRefused
			out.Err = fmt.Errorf("%w: event %q: effect version %d of consumer %s is not registered as executing for job %s; "+
				"replays go through `replayctl execute`", ErrReplayRefused, d.ev.ID, d.ev.EffectVersion, c.cfg.Name, d.ev.JobID)
			c.term(d, out.Err)
			return d, out
		}
	}
	return d, c.processEvent(ctx, d, out)
}

// processEvent decides from the event's ledger rows, claims its row and runs the handler.
func (c *Consumer) processEvent(ctx context.Context, d *delivery, out Outcome) Outcome {
	ev := d.ev
	if err := c.fingerprints.register(ctx); err != nil {
		return c.retry(d, out, err)
	}
	rows, err := c.cfg.Store.EffectsForEvent(ctx, c.cfg.Name, ev.ID)
	if err != nil {
		return c.retry(d, out, err)
	}
	incoming, err := c.fingerprints.incoming(ctx, rows, ev.Payload)
	if err != nil {
		return c.retry(d, out, err)
	}
	key := ledger.EffectKey{Consumer: c.cfg.Name, EventID: ev.ID, EffectVersion: ev.EffectVersion}
	if settled, done := c.settle(ctx, d, out, rows, incoming); done {
		return settled
	}
	hash, alg := c.fingerprints.current.Sum(ev.Payload), c.fingerprints.current.Algorithm()
	if ex, expired := c.evidenceExpired(d, rows); expired {
		if met, done := c.meetExpired(ctx, d, out, key, ex, hash, alg); done {
			return met
		}
	}
	claim := ledger.EffectClaim{Key: key, RequestHash: hash,
		RequestHashAlg: alg, Owner: d.owner, Lease: c.cfg.Lease, JobID: ev.JobID,
		AnyVersionSettles: d.anyVersionSettles}
	for i, r := range rows {
		if r.EffectVersion == ev.EffectVersion {
			claim.TakeOverHash, claim.TakeOverHashAlg = incoming[i], r.RequestHashAlg
		}
	}
	cctx, span := child(ctx, "claim")
	claimed, err := c.cfg.Store.EffectsClaim(cctx, claim)
	endStep(span, err)
	if err != nil {
		return c.retry(d, out, err)
	}
	if !claimed {
		// Another instance claimed it between the read and the claim; a redelivery will see its outcome.
		out.Kind, out.Err = OutcomeInProgress, fmt.Errorf("event %q version %d: another instance claimed it first", ev.ID, ev.EffectVersion)
		c.nak(d, c.backoff(ev.Delivery))
		return out
	}
	if ev.Delivery > c.cfg.MaxDeliver {
		cause := WithReasonClass("redelivered without a recorded outcome", fmt.Errorf("delivered %d times without a recorded outcome (MaxDeliver %d): the handler may be crashing the process on it",
			ev.Delivery, c.cfg.MaxDeliver))
		if _, err := c.cfg.Store.EffectsRelease(ctx, key, d.owner, cause.Error()); err != nil {
			return c.retry(d, out, err)
		}
		out.Kind, out.Err = OutcomeDeadLettered, cause
		return c.deadLetter(ctx, d, out)
	}
	return c.handle(ctx, d, out, key)
}

// settle answers from the ledger rows alone when they already decide the message; done is false
// when the row is free to claim. incoming holds the payload's fingerprint under each row's
// algorithm ("" where it cannot be computed).
func (c *Consumer) settle(ctx context.Context, d *delivery, out Outcome, rows []ledger.EffectRow, incoming []string) (Outcome, bool) {
	ev := d.ev
	for i, r := range rows {
		hash := incoming[i]
		if hash == "" {
			return c.refuseUncomparable(ctx, d, out, r), true
		}
		if r.RequestHash != hash {
			c.recordIncident(ctx, ledger.EffectIncident{Consumer: c.cfg.Name, EventID: ev.ID, EffectVersion: ev.EffectVersion,
				Kind: ledger.IncidentPayloadConflict, DedupKey: fmt.Sprintf("seq %d %s", d.seq, hash), StoredHash: r.RequestHash, IncomingHash: hash})
			out.Kind, out.StoredHash, out.IncomingHash = OutcomeConflict, r.RequestHash, hash
			out.Err = fmt.Errorf("event %q: payload fingerprint %s differs from %s stored under effect version %d (algorithm %s): "+
				"the same Event-Id carries a different request; it is never processed automatically, fix the producer or review it by hand",
				ev.ID, hash, r.RequestHash, r.EffectVersion, r.RequestHashAlg)
			c.term(d, out.Err)
			return out, true
		}
	}
	for _, r := range rows {
		// A write-forbidden replay's row settles only a redelivery of that replay: it made no call.
		if settledState(r.State) && (r.EffectVersion == ev.EffectVersion || (d.anyVersionSettles && !r.WriteForbidden)) {
			out.Kind = OutcomeDuplicate
			c.ack(d)
			return out, true
		}
	}
	for _, r := range rows {
		if r.State == "uncertain" {
			return c.termUncertain(d, out, fmt.Errorf("event %q: its ledger row under effect version %d is uncertain (%s); "+
				"it is never retried automatically: review it by hand", ev.ID, r.EffectVersion, r.LastError)), true
		}
	}
	// Any version's lease counts, not just our own: a live copy running beside its replay (or the
	// other way round) would make the same external call twice.
	for _, r := range rows {
		if r.State != "processing" {
			continue
		}
		if !r.LeaseLive {
			c.recordIncident(ctx, ledger.LeaseLapsedIncident(r))
			traceEvent(ctx, "lease lapsed", fmt.Sprintf("the lease of another instance lapsed after %d call(s) started", r.CallsStarted))
		}
		if r.LeaseLive {
			out.Kind = OutcomeInProgress
			out.Err = fmt.Errorf("event %q version %d: %s holds the lease for another %s", ev.ID, r.EffectVersion, r.LeaseOwner, r.LeaseRemaining)
			c.nak(d, max(r.LeaseRemaining, minInProgressDelay))
			return out, true
		}
		if r.CallsStarted > 0 {
			lapsed := ledger.EffectKey{Consumer: r.Consumer, EventID: r.EventID, EffectVersion: r.EffectVersion}
			marked, err := c.cfg.Store.EffectsMarkLapsedUncertain(ctx, lapsed)
			if err != nil {
				return c.retry(d, out, err), true
			}
			if !marked {
				// Its holder heartbeated or finished in the meantime.
				out.Kind = OutcomeInProgress
				out.Err = fmt.Errorf("event %q version %d: %s revived its lease", ev.ID, r.EffectVersion, r.LeaseOwner)
				c.nak(d, c.cfg.Heartbeat)
				return out, true
			}
			return c.termUncertain(d, out, fmt.Errorf("event %q version %d: the lease of %s lapsed after %d external call(s) started; "+
				"their outcome is unknown: review it by hand", ev.ID, r.EffectVersion, r.LeaseOwner, r.CallsStarted)), true
		}
	}
	return out, false
}

// recordIncident keeps a conflict or a lapsed lease for `replayctl ledger stats`. It is a report,
// not a decision: failing to write it is logged and the message is handled as it would be anyway.
func (c *Consumer) recordIncident(ctx context.Context, inc ledger.EffectIncident) {
	c.meters.incident(inc.Kind)
	if err := c.cfg.Store.EffectIncidentsInsert(ctx, inc); err != nil {
		c.log.Warn("recording an incident failed", "consumer", c.cfg.Name, "event_id", inc.EventID, "kind", inc.Kind, "error", err)
	}
}

// settledState: reconciled rows were settled by a look-up or a person and may not run again. An
// expired tombstone is not settled on its own word: meetExpired asks the look-up.
func settledState(state string) bool {
	return state == "completed" || state == "reconciled"
}

// handle runs the handler under a heartbeated lease and records its outcome.
func (c *Consumer) handle(ctx context.Context, d *delivery, out Outcome, key ledger.EffectKey) Outcome {
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	fx := &Effects{suppress: d.ev.WriteForbidden, traced: trace.SpanFromContext(ctx).IsRecording(), starting: func(ctx context.Context, n int) error {
		ok, err := c.cfg.Store.EffectsCallStarted(ctx, key, d.owner, n)
		if err == nil && !ok {
			err = fmt.Errorf("%w: the lease on %s is no longer live", ErrLeaseLost, key)
		}
		return err
	}}
	stopHeartbeat := c.heartbeat(ctx, cancel, key, d.owner, d.msg)
	res, herr := c.runHandler(hctx, d.ev, fx)
	stopHeartbeat()

	made, unknown := fx.tally()
	out.Effects = fx.Recorded()
	refs, err := json.Marshal(out.Effects)
	if err != nil {
		return c.retry(d, out, err)
	}
	if unknown != nil {
		cause := fmt.Errorf("%w; the write may have happened", unknown)
		return c.markUncertain(ctx, d, out, key, made, refs, cause)
	}
	if herr != nil && !IsBusiness(herr) {
		return c.transient(ctx, d, out, key, made, refs, herr, errors.Is(context.Cause(hctx), ErrLeaseLost))
	}
	body, resultHash, err := encodeResult(res, herr)
	if err != nil {
		return c.transient(ctx, d, out, key, made, refs, err, false)
	}
	if kr := c.cfg.ResultKeyring; kr != nil {
		body = kr.SealJSON(body, seal.ResultContext(key.Consumer, key.EventID, key.EffectVersion))
	}
	completion := ledger.EffectCompletion{Key: key, Owner: d.owner, ResultHash: resultHash, ResultBody: body,
		EffectCount: made, ExternalRefs: refs, ResultRetention: c.cfg.ResultRetention, EvidenceRetention: c.cfg.EvidenceRetention,
		WriteForbidden: d.ev.WriteForbidden}
	out.Kind = OutcomeCompleted
	if herr != nil {
		completion.OutcomeKind, completion.LastError = "business", clip.Stored(herr.Error(), maxLastErrorBytes)
		out.Kind, out.Err = OutcomeBusinessFailure, herr
	}
	cctx, span := child(ctx, "complete")
	completed, err := c.cfg.Store.EffectsComplete(cctx, completion)
	endStep(span, err)
	switch {
	case err != nil:
		// Nothing is recorded: the redelivery finds the lease, then its lapse decides (uncertain if
		// a call was made, a clean re-run if not).
		return c.retry(d, out, err)
	case !completed && made > 0:
		return c.termUncertain(d, out, fmt.Errorf("%w: event %q version %d: %d external call(s) were made but the outcome could "+
			"not be recorded; review it by hand", ErrLeaseLost, d.ev.ID, d.ev.EffectVersion, made))
	case !completed:
		return c.retry(d, out, fmt.Errorf("%w: event %q version %d: the outcome was not recorded", ErrLeaseLost, d.ev.ID, d.ev.EffectVersion))
	}
	c.ack(d)
	return out
}

// transient records a transient failure: released for a retry when no call was made, uncertain
// when one was (there is no outcome to store and a retry would repeat the write).
func (c *Consumer) transient(ctx context.Context, d *delivery, out Outcome, key ledger.EffectKey, made int, refs []byte, herr error, leaseLost bool) Outcome {
	if made > 0 {
		return c.markUncertain(ctx, d, out, key, made, refs,
			fmt.Errorf("the handler failed after %d external call(s) were made: %w", made, herr))
	}
	if leaseLost {
		return c.retry(d, out, herr)
	}
	released, err := c.cfg.Store.EffectsRelease(ctx, key, d.owner, clip.Stored(herr.Error(), maxLastErrorBytes))
	if err != nil {
		return c.retry(d, out, errors.Join(herr, err))
	}
	if !released {
		return c.retry(d, out, fmt.Errorf("%w: %w", ErrLeaseLost, herr))
	}
	if d.ev.Delivery >= c.cfg.MaxDeliver {
		out.Kind, out.Err = OutcomeDeadLettered, herr
		return c.deadLetter(ctx, d, out)
	}
	return c.retry(d, out, herr)
}

// markUncertain marks our row uncertain and terms the message. If the write fails the message is
// nakked, not termed: the row keeps calls_started > 0, so the redelivery finds its lease lapsed
// and marks it uncertain then. A termed message would leave the row processing with nobody to
// look at it again, and the replay waiting for it forever.
func (c *Consumer) markUncertain(ctx context.Context, d *delivery, out Outcome, key ledger.EffectKey, made int, refs []byte, cause error) Outcome {
	_, err := c.cfg.Store.EffectsMarkUncertain(ctx, ledger.EffectUncertainty{Key: key, Owner: d.owner,
		EffectCount: made, ExternalRefs: refs, LastError: clip.Stored(cause.Error(), maxLastErrorBytes)})
	if err != nil {
		return c.retry(d, out, fmt.Errorf("event %q version %d: %w; recording it as uncertain failed (%w): the redelivery "+
			"records it once the lease lapses, and never runs it again", d.ev.ID, d.ev.EffectVersion, cause, err))
	}
	return c.termUncertain(d, out, fmt.Errorf("event %q version %d: %w; it is never retried automatically: review it by hand",
		d.ev.ID, d.ev.EffectVersion, cause))
}

func (c *Consumer) termUncertain(d *delivery, out Outcome, err error) Outcome {
	out.Kind, out.Err = OutcomeUncertain, err
	c.term(d, err)
	return out
}

func (c *Consumer) retry(d *delivery, out Outcome, err error) Outcome {
	out.Kind, out.Err = OutcomeRetrying, err
	c.nak(d, c.backoff(d.ev.Delivery))
	return out
}

// backoff doubles RetryBackoff per delivery, capped at a minute.
func (c *Consumer) backoff(delivery int) time.Duration {
	delay := c.cfg.RetryBackoff
	for i := 1; i < delivery && delay < maxRetryBackoff; i++ {
		delay *= 2
	}
	return min(delay, maxRetryBackoff)
}

// Ack, nak and term failures are logged, not returned: the ledger already holds the truth and a
// redelivery is answered from it.
func (c *Consumer) ack(d *delivery) {
	if err := d.msg.Ack(); err != nil {
		c.log.Warn("ack failed", "consumer", c.cfg.Name, "event_id", d.ev.ID, "error", err)
	}
}

func (c *Consumer) nak(d *delivery, delay time.Duration) {
	if err := d.msg.NakWithDelay(delay); err != nil {
		c.log.Warn("nak failed", "consumer", c.cfg.Name, "event_id", d.ev.ID, "error", err)
	}
}
