package executor

import "github.com/replayctl/replayctl/ledger"

// JobProgress is where job's targets stand, from counts read along with it (ledger.JobsList
// reads many jobs' at once): the figures status shows, computed the same way.
func JobProgress(job ledger.Job, targetCounts map[string]int64, e ledger.JobEffectCounts) Progress {
	return progressOf(job.Targets, targetCounts, e, settledStatus(job.Status))
}
