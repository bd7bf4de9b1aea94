// Package job owns a replay job's lifecycle: its statuses, the one table of which status may
// follow which, whether a manifest is the job the ledger recorded, and the operator's controls
// (pause, resume, cancel). It never prints; it returns values and typed errors.
package job

import "github.com/replayctl/replayctl/jobtype"

// Final reports whether a job in status s is over: no transition leaves it.
func Final(s jobtype.Status) bool {
	for _, t := range transitions {
		if t.allows(s) {
			return false
		}
	}
	return true
}
