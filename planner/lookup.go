package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/protocol"
	"github.com/replayctl/replayctl/reconcile"
)

// Look-up bounds: plan asks about expired evidence as reconcile asks about uncertain rows.
const (
	lookupConcurrency = 8
	lookupTimeout     = 10 * time.Second
)

// lookUpExpired asks the consumer's look-up once about each evidence_expired event, as the
// contract says (docs/contract.md, "Ledger states"): happened is recorded reconciled through the
// SDK's own compare-and-set (ledger.ExpiredVerdict, audited) and kept out; not happened becomes a target;
// unknown, no answer, no responder or a row changed since it was read stays evidenceExpired, for
// manual review. nil when there was nothing to ask.
func lookUpExpired(ctx context.Context, nc *nats.Conn, store Ledger, session *ledger.PlanSession, opts *Options,
	knownVersion int, currentAlg string) (*manifest.EvidenceLookup, error) {
	if opts.NoLookup {
		return nil, nil
	}
	candidates, err := session.ExpiredEvidence(ctx, opts.Consumer)
	if err != nil || len(candidates) == 0 {
		return nil, err
	}
	opts.stage("asking %s about %d events whose ledger evidence expired", protocol.ReconcileSubject(opts.Consumer), len(candidates))
	rows := make([]ledger.UncertainRow, len(candidates))
	for i, c := range candidates {
		if c.RequestHashAlg == "" {
			candidates[i].RequestHashAlg = currentAlg
		}
		if c.EffectVersion == 0 {
			// No row is left to say under which version the event ran; the highest known is the
			// latest it can have run under, and a DLQ plan keeps a reconciled older version out.
			candidates[i].EffectVersion = max(knownVersion, 1)
		}
		c = candidates[i]
		rows[i] = ledger.UncertainRow{EventID: c.EventID, EffectVersion: c.EffectVersion, RequestHash: c.RequestHash,
			RequestHashAlg: c.RequestHashAlg, ExternalRefs: c.ExternalRefs}
	}
	answers, askErr := reconcile.LookUp(ctx, nc, opts.Consumer, rows, lookupConcurrency, lookupTimeout)
	if askErr != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	out := &manifest.EvidenceLookup{Events: make([]manifest.LookupOutcome, len(candidates))}
	if askErr != nil {
		out.Stopped = clip.Runes(askErr.Error(), 300)
	}
	var verdicts []ledger.ExpiredVerdict
	var happenedAt []int
	var notHappened []ledger.PlanExpiredEvidence
	for i, c := range candidates {
		a := answers[i]
		out.Events[i] = manifest.LookupOutcome{EventID: c.EventID, Outcome: manifest.LookupKeptOut}
		if !a.Asked() {
			continue
		}
		out.Asked++
		out.Events[i].Verdict = a.Verdict
		switch a.Verdict {
		case protocol.VerdictHappened:
			refs, err := json.Marshal(a.FoundRefs)
			if err != nil {
				return nil, fmt.Errorf("encode the references the look-up found for event %q: %w", c.EventID, err)
			}
			verdicts = append(verdicts, ledger.ExpiredVerdict{Key: ledger.EffectKey{Consumer: opts.Consumer, EventID: c.EventID,
				EffectVersion: c.EffectVersion}, RequestHash: c.RequestHash, RequestHashAlg: c.RequestHashAlg,
				Verdict: ledger.VerdictHappened, Note: a.Detail, ExternalRefs: refs, Actor: opts.Actor,
				EvidenceRetention: opts.EvidenceWindow})
			happenedAt = append(happenedAt, i)
		case protocol.VerdictNotHappened:
			notHappened = append(notHappened, c)
			out.Events[i].Outcome = manifest.LookupTarget
		}
	}
	// A happened verdict is a fact about the provider, recorded whether or not this plan is: the
	// next plan, or a redelivery, then finds the event reconciled and asks no more.
	written, err := store.EffectsApplyExpiredVerdicts(ctx, verdicts)
	if err != nil {
		return nil, fmt.Errorf("plan of consumer %s: %w; the verdicts before it are recorded, plan again", opts.Consumer, err)
	}
	var happened []string
	for k, ok := range written {
		if ok {
			i := happenedAt[k]
			happened = append(happened, candidates[i].EventID)
			out.Events[i].Outcome = manifest.LookupReconciled
		}
	}
	note := "plan " + opts.JobID + ": the consumer's look-up said the effect did not happen"
	if err := session.SettleExpired(ctx, opts.Consumer, happened, notHappened, note, opts.Actor, opts.Max); err != nil {
		return nil, err
	}
	for _, e := range out.Events {
		switch e.Outcome {
		case manifest.LookupReconciled:
			out.Reconciled++
		case manifest.LookupTarget:
			out.Targets++
		default:
			out.KeptOut++
		}
	}
	return out, nil
}
