package shadow

import (
	"encoding/json"
	"time"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
)

// Comparisons and what they were made on, as job_targets stores them.
const (
	comparisonIdentical  = "identical"
	comparisonChanged    = "changed"
	comparisonNoOriginal = "no_original"
	// comparisonFailed is a terminal business failure whose original succeeded or is unknown;
	// comparisonFailedAgain one whose original failed too. Neither is compared any further.
	comparisonFailed      = "failed"
	comparisonFailedAgain = "failed_again"
	comparedOnBody        = "body"
	comparedOnHash        = "hash"
)

// comparer compares shadow results with their baselines, leaving out --ignore-field paths and
// the noise the sample measured.
type comparer struct {
	ignore, noise pathSet
}

// comparison is a shadow result set against its baseline.
type comparison struct {
	on      string
	changed bool
	fields  classified
}

// compare sets a shadow result against a baseline result, on their bodies when both have one,
// else on their hashes. A baseline body without a stored hash is fingerprinted here.
func (c *comparer) compare(shadowBody json.RawMessage, shadowHash string, baseBody json.RawMessage, baseHash string) comparison {
	if shadowBody != nil && baseBody != nil {
		diffs, err := diffResults(baseBody, shadowBody)
		if err == nil {
			fields := classify(diffs, c.ignore, c.noise)
			return comparison{on: comparedOnBody, changed: len(fields.changed) > 0, fields: fields}
		}
	}
	if baseHash == "" && baseBody != nil {
		baseHash = fingerprint.Payload(baseBody)
	}
	return comparison{on: comparedOnHash, changed: shadowHash != baseHash}
}

// targetResult is one target's outcome as stored, with the external calls it would make.
type targetResult struct {
	outcome ledger.ShadowOutcome
	effects []protocol.Effect
	// asked says the full pass sent the request; a sampled target's result is the sample's.
	asked bool
	// effectsChanged says the shadow would make another number of external calls than the original.
	effectsChanged bool
}

// unanswered reports whether the request went unanswered (the responder is missing or hung).
func (r *targetResult) unanswered() bool {
	return r.outcome.Status == statusTimeout || r.outcome.Status == statusNoResponder
}

// judge turns what happened to one target into its stored outcome: missing says why its DLQ
// message is unusable (empty when it was sent), a is the reply and orig its ledger original, if any.
func (c *comparer) judge(t ledger.ShadowTarget, missing string, a *answer, orig *ledger.Original, at time.Time) targetResult {
	out := ledger.ShadowOutcome{EventID: t.EventID, ShadowedAt: at}
	if missing != "" {
		out.Status, out.Error = statusSourceMissing, missing
		return targetResult{outcome: out}
	}
	out.Status, out.Error, out.ResultHash, out.EffectCount = a.status, a.err, a.resultHash, len(a.effects)
	res := targetResult{outcome: out, effects: a.effects}
	if a.status != statusOK {
		return res
	}
	if message, failed := businessFailure(a.result); failed {
		res.outcome.Comparison, res.outcome.Error = comparisonFailed, clip.Runes(message, maxStoredError)
		if originalFailed(orig) {
			res.outcome.Comparison = comparisonFailedAgain
		}
		return res
	}
	if orig == nil {
		res.outcome.Comparison = comparisonNoOriginal
		return res
	}
	cmp := c.compare(a.result, a.resultHash, orig.ResultBody, orig.ResultHash)
	res.outcome.ComparedOn, res.outcome.Comparison = cmp.on, comparisonIdentical
	res.effectsChanged = len(a.effects) != orig.EffectCount
	if cmp.changed || res.effectsChanged {
		res.outcome.Comparison = comparisonChanged
	}
	return res
}
