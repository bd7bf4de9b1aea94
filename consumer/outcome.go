package consumer

import (
	"context"
	"log/slog"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/protocol"
)

// OutcomeKind says what Process did with a message.
type OutcomeKind string

// Outcome kinds. Each names the ledger's state and what was done with the message.
const (
	OutcomeCompleted       OutcomeKind = "completed"        // handler succeeded, row completed, acked
	OutcomeBusinessFailure OutcomeKind = "business_failure" // completed with outcome_kind business, acked
	OutcomeDuplicate       OutcomeKind = "duplicate"        // already completed: handler not run, acked
	OutcomeReconciled      OutcomeKind = "reconciled"       // evidence expired, the look-up says it happened: row reconciled, handler not run, acked
	OutcomeRetrying        OutcomeKind = "retrying"         // transient failure: row released, nak with backoff
	OutcomeDeadLettered    OutcomeKind = "dead_lettered"    // MaxDeliver reached: published to DLQSubject, acked
	OutcomeUncertain       OutcomeKind = "uncertain"        // unknown external outcome: row uncertain, term; never retried
	OutcomeConflict        OutcomeKind = "conflict"         // same key, different request hash: term, row untouched
	OutcomeInProgress      OutcomeKind = "in_progress"      // another owner holds a live lease: nak with delay
	OutcomeRefused         OutcomeKind = "refused"          // replay whose (job, version) is not registered executing: term
	OutcomeInvalid         OutcomeKind = "invalid"          // no/invalid Event-Id or bad replay headers: dead-lettered (nothing to key a ledger row on)
)

// Outcome is what Process did with one message and why.
type Outcome struct {
	Kind          OutcomeKind
	EventID       string
	EffectVersion int
	// Effects are the recorded calls (Suppressed for write-forbidden).
	Effects []protocol.Effect
	// StoredHash and IncomingHash are set for a conflict: the stored record beside the new one.
	StoredHash, IncomingHash string
	// Err says why, for every kind but completed and duplicate (and, for a business failure, is
	// the handler's error).
	Err error
}

// logOutcome reports IDs, hashes and counts only; Err may quote a handler's error, never the
// payload, which the SDK never puts into an error.
func (c *Consumer) logOutcome(ctx context.Context, o Outcome, ev Event) {
	level := slog.LevelInfo
	switch o.Kind {
	case OutcomeUncertain, OutcomeConflict, OutcomeDeadLettered, OutcomeInvalid, OutcomeRefused:
		level = slog.LevelWarn // each needs a person or a replay
	}
	attrs := []any{"consumer", c.cfg.Name, "event_id", o.EventID, "effect_version", o.EffectVersion,
		"outcome", string(o.Kind), "delivery", ev.Delivery, "calls", len(o.Effects), "instance", c.cfg.Owner}
	if ev.JobID != "" {
		attrs = append(attrs, "job", ev.JobID)
	}
	if o.StoredHash != "" {
		attrs = append(attrs, "stored_hash", o.StoredHash, "incoming_hash", o.IncomingHash)
	}
	if o.Err != nil {
		attrs = append(attrs, "error", clip.Stored(o.Err.Error(), maxLastErrorBytes))
	}
	c.log.Log(ctx, level, "message processed", attrs...)
}
