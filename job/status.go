// Package job owns a replay job's lifecycle: its statuses, the one table of which status may
// follow which, whether a manifest is the job the ledger recorded, and the operator's controls
// (pause, resume, cancel). It never prints; it returns values and typed errors.
package job

import "github.com/replayctl/replayctl/ledger"

// Status is a job's status. The type and its values are the ledger's, since they are its
// schema's check constraint; job names them for the packages that decide with them, as os does
// fs.FileMode.
type Status = ledger.JobStatus

// Job statuses, in the order a job moves through them; completed, cancelled and failed are final.
const (
	Planned   = ledger.JobPlanned
	Shadowing = ledger.JobShadowing
	Shadowed  = ledger.JobShadowed
	Executing = ledger.JobExecuting
	Paused    = ledger.JobPaused
	Completed = ledger.JobCompleted
	Cancelled = ledger.JobCancelled
	Failed    = ledger.JobFailed
)

// Statuses are every status, in the order a job moves through them.
var Statuses = []Status{Planned, Shadowing, Shadowed, Executing, Paused, Completed, Cancelled, Failed}

// Final reports whether a job in status s is over: no transition leaves it.
func Final(s Status) bool {
	for _, t := range transitions {
		if t.allows(s) {
			return false
		}
	}
	return true
}
