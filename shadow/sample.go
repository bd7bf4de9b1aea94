package shadow

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

// seedOf is the sample seed of a manifest: the first 16 hex digits of its digest, so the same
// manifest samples the same events on every run and another plan samples others.
func seedOf(digest string) string {
	hex := strings.TrimPrefix(digest, "sha256:")
	return hex[:min(16, len(hex))]
}

// quotas splits a sample of size over the strata (failure groups) in proportion to their target counts,
// by largest remainder, with a floor of one: a reason whose share is below one sample gets one,
// and the others split what is left, until every remaining share is at least one. When size is
// below the number of reasons, the most frequent reasons get one each. Ties go to the reason that
// sorts first.
func quotas(counts map[string]int64, size int) map[string]int {
	type share struct {
		reason string
		count  int64
		rest   int64 // remainder numerator over the round's pool
	}
	var free []*share
	var total int64
	for reason, n := range counts {
		if n > 0 {
			free = append(free, &share{reason: reason, count: n})
			total += n
		}
	}
	slices.SortFunc(free, func(a, b *share) int {
		return cmp.Or(cmp.Compare(b.count, a.count), strings.Compare(a.reason, b.reason))
	})
	slots := int64(min(int64(size), total))
	out := make(map[string]int, len(free))
	if slots < int64(len(free)) {
		for _, s := range free[:slots] {
			out[s.reason] = 1
		}
		return out
	}
	var pool int64
	for {
		pool = 0
		for _, s := range free {
			pool += s.count
		}
		var next []*share
		fixed := int64(0)
		for _, s := range free {
			if slots*s.count < pool { // a share below one sample
				out[s.reason] = 1
				fixed++
			} else {
				next = append(next, s)
			}
		}
		if fixed == 0 {
			break
		}
		free, slots = next, slots-fixed
	}
	given := int64(0)
	for _, s := range free {
		q := slots * s.count / pool
		s.rest = slots * s.count % pool
		out[s.reason] = int(q)
		given += q
	}
	byRest := slices.Clone(free)
	slices.SortStableFunc(byRest, func(a, b *share) int { return cmp.Compare(b.rest, a.rest) })
	for _, s := range byRest[:slots-given] {
		out[s.reason]++
	}
	return out
}

// sampled is one sampled target with everything asked about it.
type sampled struct {
	target   ledger.ShadowTarget
	missing  string
	original *ledger.Original
	// first and second are the two runs under effectVersion.to; from is the baseline run under
	// effectVersion.from, asked only when there is no original and from is above 0. Unasked runs
	// are nil.
	first, second, from *answer
}

// sample chooses the sample, shadows it, measures noise and fills the report's sample. With no
// sample request answered it marks the full pass aborted.
func (sh *runner) sample(ctx context.Context, r *Report) error {
	m, opts := sh.m, sh.opts
	// Stratified by failure group, as inspect counts: reasons that carry numbers, hosts or IDs
	// are one stratum, not one each.
	strata, groupOf := dlq.Strata(m)
	perGroup := quotas(strata, opts.Sample)
	opts.stage("choosing the sample: %d targets over %d failure groups, seed %s", sum(perGroup), len(perGroup), r.Seed)
	targets, err := sh.store.JobTargetsSample(ctx, m.ID, r.Seed, perGroup, groupOf)
	if err != nil {
		return err
	}
	opts.stage("shadowing the sample twice under effect version %d to measure noise, and comparing it with the originals", m.EffectVersion.To)
	items, err := sh.shadowSample(ctx, targets)
	if err != nil {
		return err
	}
	sh.cmp.noise = measureNoise(items)
	r.Sample = Sample{Seed: r.Seed, Size: len(items), PerReason: map[string]int{}, Items: make([]SampleItem, 0, len(items))}
	sh.sampled, sh.counted = make(map[string]*targetResult, len(items)), make(map[string]bool, len(items))
	now := opts.Now()
	for _, s := range items {
		r.Sample.PerReason[cmp.Or(groupOf[s.target.FailureReason], s.target.FailureReason)]++
		r.Sample.Items = append(r.Sample.Items, sh.cmp.describe(s, m))
		res := sh.cmp.judge(s.target, s.missing, s.first, s.original, now)
		if res.outcome.Comparison == comparisonFailed && s.from.failed() {
			res.outcome.Comparison = comparisonFailedAgain
		}
		sh.sampled[s.target.EventID] = &res
	}
	r.Fields = summarise(r.Sample.Items)
	if answered, sent := anyAnswered(items); sent && !answered {
		r.Totals.Aborted = true
		r.Totals.AbortReason = fmt.Sprintf("no shadow responder answered on %s: start the consumer's shadow responder (consumer.ServeShadow) and run shadow again", r.Subject)
	}
	return nil
}

// shadowSample asks the responder about every sampled target: twice under the new version (to
// measure noise) and, without an original, once under the old one if there is one. An unanswered
// first run is not repeated: a hung responder must not cost three timeouts per event.
func (sh *runner) shadowSample(ctx context.Context, targets []ledger.ShadowTarget) ([]*sampled, error) {
	m, req := sh.m, sh.req
	stream, err := sh.js.Stream(ctx, m.Source.Stream)
	if err != nil {
		return nil, fmt.Errorf("look up the DLQ stream %s of job %s: %w", m.Source.Stream, m.ID, err)
	}
	ids := make([]string, len(targets))
	for i, t := range targets {
		ids[i] = t.EventID
	}
	originals, _, err := sh.originals(ctx, ids)
	if err != nil {
		return nil, err
	}
	items := make([]*sampled, len(targets))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(sh.opts.Concurrency)
	for i, t := range targets {
		s := &sampled{target: t}
		if o, ok := originals[t.EventID]; ok {
			s.original = &o
		}
		items[i] = s
		g.Go(func() error {
			msg, missing, err := dlq.Fetch(gctx, stream, m, sourceTarget(t))
			payload := msg.Data
			if err != nil || missing != "" {
				s.missing = missing
				return err
			}
			if s.first, err = req.ask(gctx, t.EventID, m.EffectVersion.To, payload); err != nil || !s.first.replied() {
				return err
			}
			if s.second, err = req.ask(gctx, t.EventID, m.EffectVersion.To, payload); err != nil {
				return err
			}
			// Version 0 means the ledger knew no version at plan time: there is no old handler to ask.
			if s.original == nil && m.EffectVersion.From > 0 {
				s.from, err = req.ask(gctx, t.EventID, m.EffectVersion.From, payload)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return items, nil
}

// anyAnswered reports whether the responder answered at least one sample request, and whether any
// was sent at all.
func anyAnswered(items []*sampled) (answered, sent bool) {
	for _, s := range items {
		for _, a := range []*answer{s.first, s.second, s.from} {
			if a != nil {
				sent = true
				answered = answered || a.replied()
			}
		}
	}
	return answered, sent
}

// measureNoise returns the result paths that differ between the two runs of the same event under
// the same version: timestamps, generated IDs and the like.
func measureNoise(items []*sampled) pathSet {
	noise := pathSet{}
	for _, s := range items {
		if s.first == nil || s.second == nil || s.first.result == nil || s.second.result == nil {
			continue
		}
		diffs, err := diffResults(s.first.result, s.second.result)
		if err != nil {
			continue
		}
		for _, d := range diffs {
			noise[d.path] = true
		}
	}
	return noise
}

// describe compares one sampled event with its baseline for the report.
func (c *comparer) describe(s *sampled, m *manifest.Manifest) SampleItem {
	item := SampleItem{EventID: s.target.EventID, FailureReason: s.target.FailureReason}
	if s.missing != "" {
		item.Outcome, item.Error = OutcomeSourceMissing, s.missing
		return item
	}
	var baseBody []byte
	var baseHash string
	if o := s.original; o != nil {
		item.Baseline, item.BaselineVersion, item.OriginalEffects = BaselineLedger, o.EffectVersion, o.EffectCount
		if o.ResultBody == nil {
			item.Baseline = BaselineLedgerHash
		}
		baseBody, baseHash = o.ResultBody, o.ResultHash
	} else if m.EffectVersion.From > 0 {
		item.Baseline, item.BaselineVersion = BaselineShadowFrom, m.EffectVersion.From
		if s.from != nil {
			item.OriginalEffects = len(s.from.effects)
			baseBody, baseHash = s.from.result, s.from.resultHash
		}
	} else {
		item.Baseline = BaselineNone
	}
	if s.first.replied() {
		item.ShadowEffects = len(s.first.effects)
	}
	var problems []string
	note := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	switch {
	case s.first.status == statusRefused:
		item.Outcome = OutcomeRefused
		note("shadow under version %d: %s", m.EffectVersion.To, s.first.err)
	case !s.first.replied():
		item.Outcome = OutcomeUnanswered
		note("shadow under version %d: %s", m.EffectVersion.To, s.first.err)
	case item.Baseline == BaselineShadowFrom && (s.from == nil || !s.from.replied()):
		item.Outcome = OutcomeUnanswered
		note("baseline shadow under version %d: %s", m.EffectVersion.From, s.from.err)
	case s.first.status == statusError || (item.Baseline == BaselineShadowFrom && s.from.status == statusError):
		item.Outcome = OutcomeError
		if s.first.status == statusError {
			note("shadow under version %d: %s", m.EffectVersion.To, s.first.err)
		}
		if s.from != nil && s.from.status == statusError {
			note("baseline shadow under version %d: %s", m.EffectVersion.From, s.from.err)
		}
	case s.first.failed():
		item.Outcome = OutcomeFailed
		item.FailedBefore = originalFailed(s.original) || s.from.failed()
		message, _ := businessFailure(s.first.result)
		note("business failure under version %d: %s", m.EffectVersion.To, clip.Runes(message, maxStoredError))
	case item.Baseline == BaselineNone:
		item.Outcome = OutcomeNoOriginal
	default:
		cmp := c.compare(s.first.result, s.first.resultHash, baseBody, baseHash)
		item.Outcome = OutcomeIdentical
		item.EffectsChanged = item.OriginalEffects != item.ShadowEffects
		if cmp.changed || item.EffectsChanged {
			item.Outcome = OutcomeChanged
		}
		item.Changed, item.Noise, item.Ignored = cmp.fields.changed, cmp.fields.noise, cmp.fields.ignored
	}
	if s.first.status == statusOK && s.second.status != statusOK {
		note("the second run, which measures noise, ended %s: %s", s.second.status, s.second.err)
	}
	item.Error = strings.Join(problems, "; ")
	return item
}

// summarise counts, per result path, the sampled events where it changed, was noise or was ignored.
func summarise(items []SampleItem) []FieldSummary {
	byPath := map[string]*FieldSummary{}
	at := func(path string) *FieldSummary {
		if f, ok := byPath[path]; ok {
			return f
		}
		f := &FieldSummary{Path: path}
		byPath[path] = f
		return f
	}
	for _, it := range items {
		for _, c := range it.Changed {
			at(c.Path).Changed++
		}
		for _, p := range it.Noise {
			at(p).Noise++
		}
		for _, p := range it.Ignored {
			at(p).Ignored++
		}
	}
	out := make([]FieldSummary, 0, len(byPath))
	for _, f := range byPath {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b FieldSummary) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
