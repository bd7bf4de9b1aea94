// Package jobtype holds a replay job's domain values that the ledger stores and the domain
// packages decide with: its statuses and its source kinds. It imports nothing of the project, so
// ledger/ imports it and converts at its boundary (as river's driver imports rivertype), never
// the reverse; which status may follow which is the job package's transition table.
package jobtype

// Status is a job's status; the values are the jobs table's check constraint (0001_init.sql).
type Status string

// Job statuses, in the order a job moves through them; completed, cancelled and failed are final.
const (
	Planned   Status = "planned"
	Shadowing Status = "shadowing"
	Shadowed  Status = "shadowed"
	Executing Status = "executing"
	Paused    Status = "paused"
	Completed Status = "completed"
	Cancelled Status = "cancelled"
	Failed    Status = "failed"
)

// Statuses are every status, in the order a job moves through them.
var Statuses = []Status{Planned, Shadowing, Shadowed, Executing, Paused, Completed, Cancelled, Failed}

// Unfinished are the statuses whose targets no other plan may take: the job may still replay
// them. The job package's tests hold it equal to the statuses its transition table lets a job
// leave.
var Unfinished = []Status{Planned, Shadowing, Shadowed, Executing, Paused}

// Source kinds (docs/contract.md, "Source kinds"), recorded in the manifest and on the job.
const (
	// SourceDLQ is a stream of dead-lettered messages carrying the DLQ headers; targets are
	// events with no completed row under any version. A manifest without source.kind is one.
	SourceDLQ = "dlq"
	// SourceBackfill is a retained stream of original messages; each replays to its own subject,
	// and targets are events completed under an older version than the job's.
	SourceBackfill = "backfill"
)

// SourceRef is a job's source as the --json outputs show it beside the job (the manifest's
// source holds the whole selection): `.source.kind` in every document.
type SourceRef struct {
	Kind string `json:"kind"`
}

// DefaultMaxInFlight is execute's --max-in-flight when neither the flag nor a stored pace sets it.
const DefaultMaxInFlight = 1000
