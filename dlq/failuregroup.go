package dlq

import (
	"regexp"

	"github.com/replayctl/replayctl/manifest"
)

// Masks applied, in order, to a failure reason to make its group: the specific values a reason
// carries (a UUID, a hex digest, a number, an ID's digits) vary between events that failed the
// same way.
var failureGroupMasks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "<uuid>"},
	{regexp.MustCompile(`(?i)\b0x[0-9a-f]+\b`), "<hex>"},
	{regexp.MustCompile(`(?i)\b[0-9a-f]*[0-9][0-9a-f]*[a-f][0-9a-f]*\b|\b[0-9a-f]*[a-f][0-9a-f]*[0-9][0-9a-f]*\b`), "<hex>"},
	{regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?`), "<n>"},
}

// FailureGroup is reason with its numbers, IDs and hex values masked, so "timeout after 3012 ms"
// and "timeout after 2998 ms" are one group: `timeout after <n> ms`. Inspect counts by it and
// plan's --failure-group selects by it.
func FailureGroup(reason string) string {
	for _, m := range failureGroupMasks {
		reason = m.re.ReplaceAllString(reason, m.with)
	}
	return reason
}

// Strata is the histogram a person reads and the shadow sample is stratified by: a DLQ plan's
// targets by failure group, a backfill's by previous outcome (already few). groupOf maps each raw
// key of the manifest's histogram (the reason kept on each target) to its stratum.
func Strata(m *manifest.Manifest) (strata map[string]int64, groupOf map[string]string) {
	raw := m.Strata()
	strata, groupOf = make(map[string]int64, len(raw)), make(map[string]string, len(raw))
	for key, n := range raw {
		g := key
		if m.Source.Kind != manifest.SourceBackfill {
			g = FailureGroup(key)
		}
		groupOf[key] = g
		strata[g] += n
	}
	return strata, groupOf
}
