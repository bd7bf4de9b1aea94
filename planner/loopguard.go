package planner

import (
	"fmt"
	"slices"

	"github.com/replayctl/replayctl/manifest"
)

// loopGuard returns the events plan keeps out because this tool's replays of them were
// dead-lettered again at least opts.FailedReplayLimit times: replaying them once more would loop
// without a fix. None with --include-failed-replays.
func loopGuard(opts *Options, failures map[string]int) []string {
	if opts.IncludeFailedReplays {
		return nil
	}
	var ids []string
	for id, n := range failures {
		if n >= opts.FailedReplayLimit {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// keepOutFailedReplays records the loop guard's events in m and seals it again.
func keepOutFailedReplays(m *manifest.Manifest, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	m.Stats.FailedAfterReplay = int64(len(ids))
	m.Excluded.FailedAfterReplay = ids[:min(len(ids), manifest.MaxListedSeqs)]
	return manifest.Seal(m)
}

// failedReplayWarning says what the loop guard kept out.
func failedReplayWarning(m *manifest.Manifest, limit int) []string {
	if m.Stats.FailedAfterReplay == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%d events were kept out as failedAfterReplay: replays by this tool failed and were dead-lettered again %d times or more (e.g. %s); fix the cause before replaying them, or pass --include-failed-replays",
		m.Stats.FailedAfterReplay, limit, m.Excluded.FailedAfterReplay[0])}
}
