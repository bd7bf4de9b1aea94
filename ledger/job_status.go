package ledger

// JobStatus is the status column of jobs. The values are the schema's check constraint
// (0001_init.sql), so they are named here, next to the SQL; which status may follow which is the
// job package's transition table (job/transitions.go).
type JobStatus string

// Job statuses, in the order a job moves through them; completed, cancelled and failed are final.
const (
	JobPlanned   JobStatus = "planned"
	JobShadowing JobStatus = "shadowing"
	JobShadowed  JobStatus = "shadowed"
	JobExecuting JobStatus = "executing"
	JobPaused    JobStatus = "paused"
	JobCompleted JobStatus = "completed"
	JobCancelled JobStatus = "cancelled"
	JobFailed    JobStatus = "failed"
)

// UnfinishedJobStatuses are the job statuses whose targets no other plan may take: the job may
// still replay them. The job package's tests hold it equal to the statuses its transition table
// lets a job leave.
var UnfinishedJobStatuses = []JobStatus{JobPlanned, JobShadowing, JobShadowed, JobExecuting, JobPaused}
