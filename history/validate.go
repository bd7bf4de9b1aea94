package history

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/ledger"
)

// defaults are what a line may leave out, fixed before the first line is read.
type defaults struct {
	consumer      string
	effectVersion int
	// algorithms are the fingerprint algorithms the consumer can compare a payload under.
	algorithms map[string]bool
	// replayWindow and evidenceWindow come from the consumer's registered retention policy; zero
	// leaves the date empty (kept until a policy or a prune says otherwise).
	replayWindow, evidenceWindow time.Duration
	// now refuses a processing date in the future: a clock or unit mix-up in the export.
	now time.Time
}

// toEffect checks one record and returns the row it imports as, or the first problem found.
func (d *defaults) toEffect(line int64, r Record) (ledger.ImportedEffect, *LineError) {
	bad := func(field, format string, args ...any) *LineError {
		return &LineError{Line: line, Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	var e ledger.ImportedEffect
	switch {
	case r.EventID == "":
		return e, bad("eventId", "missing: every line needs the event ID the consumer deduplicates on")
	case len(r.EventID) > maxEventIDBytes:
		return e, bad("eventId", "%d bytes, longer than %d: is a payload in the ID column?", len(r.EventID), maxEventIDBytes)
	case !utf8.ValidString(r.EventID):
		return e, bad("eventId", "not valid UTF-8")
	}
	e.EventID = r.EventID
	if r.Consumer != "" && r.Consumer != d.consumer {
		return e, bad("consumer", "%q, but the import is for consumer %q: split the file by consumer and run one import each", r.Consumer, d.consumer)
	}
	e.EffectVersion = d.effectVersion
	if r.EffectVersion != nil {
		if *r.EffectVersion < 0 {
			return e, bad("effectVersion", "%d is negative", *r.EffectVersion)
		}
		e.EffectVersion = *r.EffectVersion
	}
	switch r.State {
	case "", "completed":
		e.State = "completed"
	case "uncertain":
		e.State = "uncertain"
	default:
		return e, bad("state", "%q: import takes completed (the effect happened) or uncertain (not known; goes to review, never replayed automatically)", r.State)
	}
	switch r.Outcome {
	case "", "success":
	case "business-failure":
		if e.State != "completed" {
			return e, bad("outcome", "business-failure is an outcome of a completed row, not of an uncertain one")
		}
		e.Business = true
	default:
		return e, bad("outcome", "%q: want success or business-failure", r.Outcome)
	}
	if r.ProcessedAt == "" {
		return e, bad("processedAt", "missing: when the old system handled the event (an RFC 3339 time or a date)")
	}
	t, err := parseTime(r.ProcessedAt)
	if err != nil {
		return e, bad("processedAt", "%v", err)
	}
	if t.After(d.now.Add(time.Minute)) {
		return e, bad("processedAt", "%s is in the future (now %s): check the export's time zone or units", t.UTC().Format(time.RFC3339), d.now.UTC().Format(time.RFC3339))
	}
	e.ProcessedAt = t
	if le := d.hashes(line, r, &e); le != nil {
		return e, le
	}
	e.EffectCount = 1
	if e.State == "uncertain" {
		e.EffectCount = 0
	}
	if r.EffectCount != nil {
		if *r.EffectCount < 0 {
			return e, bad("effectCount", "%d is negative", *r.EffectCount)
		}
		e.EffectCount = *r.EffectCount
	}
	if e.ReplayUntil, err = d.until(r.ReplayUntil, t, d.replayWindow); err != nil {
		return e, bad("replayUntil", "%v", err)
	}
	if e.EvidenceUntil, err = d.until(r.EvidenceUntil, t, d.evidenceWindow); err != nil {
		return e, bad("evidenceUntil", "%v", err)
	}
	return e, nil
}

func (d *defaults) hashes(line int64, r Record, e *ledger.ImportedEffect) *LineError {
	bad := func(field, format string, args ...any) *LineError {
		return &LineError{Line: line, Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	switch {
	case r.RequestHash == "" && r.RequestHashAlg == "":
		// The old system kept no fingerprint: the event ID alone decides, as its dedup did.
		e.RequestHash, e.RequestHashAlg = fingerprint.NoneHash, fingerprint.AlgorithmNone
	case r.RequestHash == "":
		return bad("requestHash", "missing beside requestHashAlg %q: give both, or neither", r.RequestHashAlg)
	case !sha256Hash.MatchString(r.RequestHash):
		return bad("requestHash", "%q is not sha256:<64 lowercase hex>", r.RequestHash)
	default:
		alg := r.RequestHashAlg
		if alg == "" {
			alg = fingerprint.Algorithm
		}
		if !d.algorithms[alg] {
			return bad("requestHashAlg", "%q is not an algorithm consumer %s can compute (%s, or one its SDK registered): "+
				"a hash no instance can recompute would refuse every later delivery of the event as a conflict", alg, d.consumer, fingerprint.Algorithm)
		}
		e.RequestHash, e.RequestHashAlg = r.RequestHash, alg
	}
	if r.ResultHash != "" && !sha256Hash.MatchString(r.ResultHash) {
		return bad("resultHash", "%q is not sha256:<64 lowercase hex>", r.ResultHash)
	}
	e.ResultHash = r.ResultHash
	return nil
}

// until is an explicit date, or processedAt plus the policy's window, or nil without either.
func (d *defaults) until(s string, processedAt time.Time, window time.Duration) (*time.Time, error) {
	if s != "" {
		t, err := parseTime(s)
		if err != nil {
			return nil, err
		}
		if t.Before(processedAt) {
			return nil, fmt.Errorf("%s is before processedAt %s", t.UTC().Format(time.RFC3339), processedAt.UTC().Format(time.RFC3339))
		}
		return &t, nil
	}
	if window <= 0 {
		return nil, nil
	}
	t := processedAt.Add(window)
	return &t, nil
}
