// Package job owns a replay job's lifecycle: its statuses, the one table of which status may
// follow which, whether a manifest is the job the ledger recorded, and the operator's controls
// (pause, resume, cancel). It never prints; it returns values and typed errors.
package job

import "github.com/replayctl/replayctl/jobtype"

// Status is a job's status, the leaf package jobtype's (the ledger stores it and imports it from
// there); job names it and its values for the packages that decide with them.
type Status = jobtype.Status

// Job statuses, in the order a job moves through them; completed, cancelled and failed are final.
const (
	Planned   = jobtype.Planned
	Shadowing = jobtype.Shadowing
	Shadowed  = jobtype.Shadowed
	Executing = jobtype.Executing
	Paused    = jobtype.Paused
	Completed = jobtype.Completed
	Cancelled = jobtype.Cancelled
	Failed    = jobtype.Failed
)

// Statuses are every status, in the order a job moves through them.
var Statuses = jobtype.Statuses

// Final reports whether a job in status s is over: no transition leaves it.
func Final(s Status) bool {
	for _, t := range transitions {
		if t.allows(s) {
			return false
		}
	}
	return true
}
