package manifest

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/replayctl/replayctl/fault"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/protocol"
)

// maxListedProblems bounds ValidationError.Errors so a broken 1M-target manifest stays readable.
const maxListedProblems = 20

// FieldError is one problem with one field of a manifest.
type FieldError struct {
	// Field is the JSON path of the field: "reason", "source.stream", "eventIds[41]",
	// "excluded.conflicts[0].where", `stats.failureReasons["timeout"]`.
	Field   string
	Problem string
}

// String returns "field: problem".
func (e FieldError) String() string { return e.Field + ": " + e.Problem }

// ValidationError lists the problems Validate found. errors.Is(err, ErrInvalid) matches it.
type ValidationError struct {
	// Errors are the first 20 problems found, in field order.
	Errors []FieldError
	// Omitted counts the problems found beyond Errors.
	Omitted int
}

// Error lists every problem in Errors and how many more were found.
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("manifest is invalid: ")
	for i, fe := range e.Errors {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(fe.String())
	}
	if e.Omitted > 0 {
		fmt.Fprintf(&b, "; ... and %d more", e.Omitted)
	}
	return b.String()
}

// Is reports whether target is ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Kind is fault.Invalid, as ErrInvalid's.
func (e *ValidationError) Kind() fault.Kind { return fault.Invalid }

type problems struct{ ValidationError }

func (p *problems) add(field, problem string) {
	if len(p.Errors) >= maxListedProblems {
		p.Omitted++
		return
	}
	p.Errors = append(p.Errors, FieldError{Field: field, Problem: problem})
}

func (p *problems) check(field string, err error) {
	if err != nil {
		p.add(field, err.Error())
	}
}

// Validate checks every field of m except the digest and returns a *ValidationError listing the
// problems, or nil.
func Validate(m *Manifest) error {
	var p problems
	if m.APIVersion != APIVersion {
		p.add("apiVersion", fmt.Sprintf("must be %q, found %q", APIVersion, clip.Bytes(m.APIVersion, maxQuoted)))
	}
	if m.Kind != KindManifest {
		p.add("kind", fmt.Sprintf("must be %q, found %q", KindManifest, clip.Bytes(m.Kind, maxQuoted)))
	}
	p.check("jobId", protocol.ValidateJobID(m.ID))
	if m.CreatedAt.IsZero() {
		p.add("createdAt", "is missing")
	}
	checkTime(&p, "createdAt", &m.CreatedAt)
	if strings.TrimSpace(m.CreatedBy) == "" {
		p.add("createdBy", "is missing: name the operator who planned the replay")
	}
	p.check("reason", ValidateReason(m.Reason))
	p.check("consumer", protocol.ValidateConsumerName(m.Consumer))
	validateSource(&p, &m.Source)
	if m.EffectVersion.From < 0 {
		p.add("effectVersion.from", fmt.Sprintf("is %d; versions start at 0", m.EffectVersion.From))
	}
	if m.EffectVersion.To > math.MaxInt32 {
		p.add("effectVersion.to", fmt.Sprintf("is %d; the ledger stores versions up to %d", m.EffectVersion.To, math.MaxInt32))
	} else if m.EffectVersion.To <= m.EffectVersion.From {
		p.add("effectVersion.to", fmt.Sprintf("is %d; it must be greater than effectVersion.from (%d)",
			m.EffectVersion.To, m.EffectVersion.From))
	}
	validateFigures(&p, m)
	excluded := excludedIDs(&m.Excluded)
	validateExcluded(&p, &m.Excluded, excluded)
	if validateEventIDs(&p, m.EventIDs) {
		checkNotTargets(&p, m.EventIDs, excluded)
	}
	if len(p.Errors) == 0 {
		return nil
	}
	return &p.ValidationError
}

func validateSource(p *problems, s *Source) {
	if s.Kind != "" && s.Kind != SourceDLQ && s.Kind != SourceBackfill {
		p.add("source.kind", fmt.Sprintf("must be %q or %q, found %q", SourceDLQ, SourceBackfill, clip.Bytes(s.Kind, maxQuoted)))
	}
	p.check("source.stream", protocol.ValidateStreamName(s.Stream))
	checkTime(p, "source.since", s.Since)
	checkTime(p, "source.until", s.Until)
	if s.Since != nil && s.Until != nil && !s.Since.Before(*s.Until) {
		p.add("source.until", fmt.Sprintf("is %s; it must be after source.since (%s)",
			s.Until.UTC().Format(time.RFC3339Nano), s.Since.UTC().Format(time.RFC3339Nano)))
	}
	if s.FailureMatch != "" {
		if _, err := regexp.Compile(s.FailureMatch); err != nil {
			p.add("source.failureMatch", "is not a valid regular expression: "+err.Error())
		}
	}
	if s.Max < 0 {
		p.add("source.max", fmt.Sprintf("is %d; use 0 for no limit", s.Max))
	}
	headers := []struct{ field, name string }{
		{"eventId", s.Headers.EventID},
		{"reason", s.Headers.Reason},
		{"originalSubject", s.Headers.OriginalSubject},
		{"attempts", s.Headers.Attempts},
		{"failedAt", s.Headers.FailedAt},
	}
	for _, h := range headers {
		p.check("source.headers."+h.field, protocol.ValidateHeaderName(h.name))
	}
	if s.FirstSeq > s.LastSeq {
		p.add("source.lastSeq", fmt.Sprintf("is %d, before source.firstSeq (%d)", s.LastSeq, s.FirstSeq))
	}
	if s.LastSeq > s.StreamLastSeq {
		p.add("source.lastSeq", fmt.Sprintf("is %d, after source.streamLastSeq (%d)", s.LastSeq, s.StreamLastSeq))
	}
}

// checkTime refuses times encoding/json cannot write (years outside 0000-9999 in UTC).
func checkTime(p *problems, field string, t *time.Time) {
	if t == nil {
		return
	}
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		p.add(field, fmt.Sprintf("has year %d in UTC; it must be between 0000 and 9999", y))
	}
}

func validateFigures(p *problems, m *Manifest) {
	st := &m.Stats
	checkCounts(p, "stats", st)
	checkCounts(p, "externalCallsEstimate", &m.ExternalCallsEstimate)
	targets := int64(len(m.EventIDs))
	if st.Targets != targets {
		p.add("stats.targets", fmt.Sprintf("is %d but eventIds has %d entries", st.Targets, targets))
	}
	if m.Source.Max > 0 && targets > int64(m.Source.Max) {
		p.add("eventIds", fmt.Sprintf("has %d entries, more than source.max (%d)", targets, m.Source.Max))
	}
	if !(st.AlreadyCompletedRatio >= 0 && st.AlreadyCompletedRatio <= 1) {
		p.add("stats.alreadyCompletedRatio", fmt.Sprintf("is %v; it must be between 0 and 1", st.AlreadyCompletedRatio))
	}
	strata, empty := "stats.failureReasons", "stats.previousOutcomes"
	if m.Source.Kind == SourceBackfill {
		strata, empty = empty, strata
	}
	if sum, ok := checkHistogram(p, strata, m.Strata()); !ok || sum != targets {
		p.add(strata, fmt.Sprintf("counts add up to %d; they must add up to the %d targets", sum, targets))
	}
	other := st.PreviousOutcomes
	if m.Source.Kind == SourceBackfill {
		other = st.FailureReasons
	}
	if len(other) > 0 {
		p.add(empty, fmt.Sprintf("must be empty for a %s plan; the targets are counted in %s", m.SourceKind(), strata))
	}
	checkHistogram(p, "stats.alreadyCompletedBy", st.AlreadyCompletedBy)
	if m.ExpectedExternalCalls < 0 {
		p.add("expectedExternalCalls", fmt.Sprintf("is %d; counts cannot be negative", m.ExpectedExternalCalls))
	}
	est := &m.ExternalCallsEstimate
	if est.KnownTargets+est.EstimatedTargets != targets {
		p.add("externalCallsEstimate", fmt.Sprintf("knownTargets (%d) + estimatedTargets (%d) must equal the %d targets",
			est.KnownTargets, est.EstimatedTargets, targets))
	}
	if !(est.MeanPerEffect >= 0) || math.IsInf(est.MeanPerEffect, 1) {
		p.add("externalCallsEstimate.meanPerEffect", fmt.Sprintf("is %v; it must be a finite number >= 0", est.MeanPerEffect))
	}
}

// checkHistogram refuses negative counts in h and returns their sum; ok is false when the sum
// overflows.
func checkHistogram(p *problems, field string, h map[string]int64) (sum int64, ok bool) {
	ok = true
	for _, k := range slices.Sorted(maps.Keys(h)) {
		n := h[k]
		if n < 0 {
			p.add(fmt.Sprintf("%s[%q]", field, clip.Bytes(k, maxQuoted)), fmt.Sprintf("is %d; counts cannot be negative", n))
			continue
		}
		ok = ok && sum <= math.MaxInt64-n
		sum += n
	}
	return sum, ok
}

// checkCounts refuses negative int64 fields of the struct v points to, named by their JSON names.
func checkCounts(p *problems, prefix string, v any) {
	rv := reflect.ValueOf(v).Elem()
	rt := rv.Type()
	for i := range rt.NumField() {
		f := rv.Field(i)
		if f.Kind() == reflect.Int64 && f.Int() < 0 {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			p.add(prefix+"."+name, fmt.Sprintf("is %d; counts cannot be negative", f.Int()))
		}
	}
}

// excludedID is one event ID in Excluded with the JSON path of its field.
type excludedID struct{ field, id string }

func excludedIDs(x *Excluded) []excludedID {
	var out []excludedID
	for i, e := range x.Uncertain {
		out = append(out, excludedID{fmt.Sprintf("excluded.uncertain[%d].eventId", i), e.EventID})
	}
	for i, e := range x.InFlight {
		out = append(out, excludedID{fmt.Sprintf("excluded.inFlight[%d].eventId", i), e.EventID})
	}
	for i, c := range x.Conflicts {
		out = append(out, excludedID{fmt.Sprintf("excluded.conflicts[%d].eventId", i), c.EventID})
	}
	for i, c := range x.AlreadyCompleted {
		out = append(out, excludedID{fmt.Sprintf("excluded.alreadyCompleted[%d].eventId", i), c.EventID})
	}
	for i, j := range x.InOtherJob {
		out = append(out, excludedID{fmt.Sprintf("excluded.inOtherJob[%d].eventId", i), j.EventID})
	}
	for i, id := range x.NotProcessed {
		out = append(out, excludedID{fmt.Sprintf("excluded.notProcessed[%d]", i), id})
	}
	return out
}

func validateExcluded(p *problems, x *Excluded, ids []excludedID) {
	for _, e := range ids {
		p.check(e.field, protocol.ValidateEventID(e.id))
	}
	for i, c := range x.Conflicts {
		if c.Where != "source" && c.Where != "ledger" {
			p.add(fmt.Sprintf("excluded.conflicts[%d].where", i),
				fmt.Sprintf(`must be "source" or "ledger", found %q`, clip.Bytes(c.Where, maxQuoted)))
		}
	}
	for _, l := range []struct {
		field string
		n     int
	}{{"excluded.alreadyCompleted", len(x.AlreadyCompleted)}, {"excluded.inOtherJob", len(x.InOtherJob)}, {"excluded.notProcessed", len(x.NotProcessed)}} {
		if l.n > MaxListedExcluded {
			p.add(l.field, fmt.Sprintf("lists %d events; the limit is %d", l.n, MaxListedExcluded))
		}
	}
	if n := len(x.MissingEventIDSeqs); n > MaxListedSeqs {
		p.add("excluded.missingEventIdSeqs", fmt.Sprintf("lists %d sequences; the limit is %d", n, MaxListedSeqs))
	}
	if n := len(x.OverMaxPayloadSeqs); n > MaxListedSeqs {
		p.add("excluded.overMaxPayloadSeqs", fmt.Sprintf("lists %d sequences; the limit is %d", n, MaxListedSeqs))
	}
}

// validateEventIDs checks each ID and their order, and reports whether they are strictly ascending.
func validateEventIDs(p *problems, ids []string) bool {
	ascending := true
	for i, id := range ids {
		if err := protocol.ValidateEventID(id); err != nil {
			p.add(fmt.Sprintf("eventIds[%d]", i), err.Error())
		}
		if i == 0 {
			continue
		}
		switch prev := ids[i-1]; {
		case id == prev:
			ascending = false
			p.add(fmt.Sprintf("eventIds[%d]", i), fmt.Sprintf("duplicate of eventIds[%d] (%q); targets must be unique", i-1, clip.Bytes(id, maxQuoted)))
		case id < prev:
			ascending = false
			p.add(fmt.Sprintf("eventIds[%d]", i), fmt.Sprintf("not sorted: %q sorts before eventIds[%d] (%q); targets must be in ascending byte order",
				clip.Bytes(id, maxQuoted), i-1, clip.Bytes(prev, maxQuoted)))
		}
	}
	return ascending
}

// checkNotTargets refuses an excluded event ID that is also a target; targets must be sorted.
func checkNotTargets(p *problems, targets []string, excluded []excludedID) {
	for _, e := range excluded {
		if _, found := slices.BinarySearch(targets, e.id); found {
			p.add(e.field, "is also in eventIds; an excluded event must not be replayed")
		}
	}
}
