package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
)

// expiredEvidence is what the ledger still knows of an event whose evidence expired: the
// tombstones that concern the delivery, none when the row itself is gone and only the message's
// age gave it away.
type expiredEvidence struct {
	tombstones []ledger.EffectRow
}

// evidenceExpired says whether the delivery meets expired evidence (docs/ledger.md, "Expired
// evidence"): a tombstone of the event (any version for a live message, the job's version for a
// replay), or no row at all for a message stored longer ago than EvidenceRetention. It is asked
// after settle, so a settled, uncertain or leased row has already decided the delivery.
func (c *Consumer) evidenceExpired(d *delivery, rows []ledger.EffectRow) (expiredEvidence, bool) {
	var ex expiredEvidence
	for _, r := range rows {
		if r.State == ledger.EffectExpired && (d.ev.Mode == ModeLive || r.EffectVersion == d.ev.EffectVersion) {
			ex.tombstones = append(ex.tombstones, r)
		}
	}
	if len(ex.tombstones) > 0 {
		return ex, true
	}
	return ex, len(rows) == 0 && !d.storedAt.IsZero() && time.Since(d.storedAt) > c.cfg.EvidenceRetention
}

// meetExpired asks the look-up once whether the event's effect happened and records the answer:
// happened is reconciled and acked without running the handler; unknown, a failed look-up or no
// Lookup goes to manual review (uncertain, termed), never run. hash and alg are the payload's
// fingerprint under the current algorithm, for a row written anew. done is false for not happened:
// the tombstones are reopened and the caller claims and processes the event as a new one.
func (c *Consumer) meetExpired(ctx context.Context, d *delivery, out Outcome, key ledger.EffectKey, ex expiredEvidence, hash, alg string) (Outcome, bool) {
	req := LookupRequest{EventID: d.ev.ID, EffectVersion: d.ev.EffectVersion, JobID: d.ev.JobID, RequestHash: hash,
		ExternalRefs: []protocol.Effect{}}
	for _, t := range ex.tombstones {
		var refs []protocol.Effect
		if json.Unmarshal(t.ExternalRefs, &refs) == nil {
			req.ExternalRefs = append(req.ExternalRefs, refs...)
		}
	}
	res := c.lookupExpired(ctx, req)
	why := fmt.Sprintf("event %q version %d: its ledger evidence expired (%s); the look-up answered %s: %s",
		d.ev.ID, d.ev.EffectVersion, ex.describe(), res.Verdict, res.Detail)
	if res.Verdict == protocol.VerdictNotHappened {
		versions := make([]int, len(ex.tombstones))
		for i, t := range ex.tombstones {
			versions[i] = t.EffectVersion
		}
		if len(versions) > 0 {
			if _, err := c.cfg.Store.EffectsReopenExpired(ctx, c.cfg.Name, d.ev.ID, versions,
				clip.Stored(res.Detail, maxLookupDetail), c.cfg.Owner); err != nil {
				return c.retry(d, out, err), true
			}
		}
		return out, false
	}
	refs, err := json.Marshal(res.ExternalRefs)
	if err != nil {
		return c.retry(d, out, err), true
	}
	written, err := c.cfg.Store.EffectsApplyExpiredVerdict(ctx, ledger.ExpiredVerdict{Key: key, RequestHash: hash,
		RequestHashAlg: alg, Verdict: res.Verdict, Note: clip.Stored(res.Detail, maxLookupDetail), ExternalRefs: refs,
		JobID: d.ev.JobID, Actor: c.cfg.Owner, EvidenceRetention: c.cfg.EvidenceRetention})
	switch {
	case err != nil:
		return c.retry(d, out, err), true
	case !written:
		// Another instance wrote the row since it was read; the redelivery is answered from it.
		out.Kind, out.Err = OutcomeInProgress, fmt.Errorf("event %q version %d: another instance settled its expired evidence first", d.ev.ID, d.ev.EffectVersion)
		c.nak(d, minInProgressDelay)
		return out, true
	case res.Verdict == protocol.VerdictHappened:
		out.Kind, out.Err = OutcomeReconciled, fmt.Errorf("%s; recorded as reconciled, the handler was not run", why)
		c.ack(d)
		return out, true
	}
	return c.termUncertain(d, out, fmt.Errorf("%s; it is never processed automatically: review it by hand (replayctl reconcile)", why)), true
}

// lookupExpired calls Config.Lookup under the look-up timeout. Every answer that is not a clear
// happened or not happened (no Lookup, an error, a panic, a verdict outside the protocol) comes
// back unknown with the reason as detail.
func (c *Consumer) lookupExpired(ctx context.Context, req LookupRequest) LookupResult {
	res := c.askLookup(ctx, req)
	if res.ExternalRefs == nil {
		res.ExternalRefs = []protocol.Effect{}
	}
	res.Detail = clip.Stored(res.Detail, maxLookupDetail)
	return res
}

func (c *Consumer) askLookup(ctx context.Context, req LookupRequest) LookupResult {
	if c.cfg.Lookup == nil {
		return LookupResult{Verdict: protocol.VerdictUnknown, Detail: fmt.Sprintf("consumer %s has no look-up configured", c.cfg.Name)}
	}
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	res, err := c.runLookup(lctx, req)
	switch {
	case err != nil:
		return LookupResult{Verdict: protocol.VerdictUnknown, Detail: "look-up failed: " + err.Error()}
	case res.Verdict != protocol.VerdictHappened && res.Verdict != protocol.VerdictNotHappened && res.Verdict != protocol.VerdictUnknown:
		return LookupResult{Verdict: protocol.VerdictUnknown, Detail: fmt.Sprintf("the look-up answered verdict %q, outside the protocol", clip.Stored(res.Verdict, 32))}
	}
	return res
}

func (ex expiredEvidence) describe() string {
	if len(ex.tombstones) == 0 {
		return "no ledger row, and the message is older than the evidence retention"
	}
	return fmt.Sprintf("an expired tombstone under effect version %d", ex.tombstones[0].EffectVersion)
}
