package jobhistory

import (
	"context"
	"time"

	"github.com/replayctl/replayctl/ledger"
)

// LogEntry is one audit entry of a job. Its JSON names are a contract for scripts.
type LogEntry struct {
	ID     int64     `json:"entryId"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"`
	// Reason is the entry's own (a pause's, a cancel's, a pace's), or for the plan the job's.
	Reason         string         `json:"reason"`
	ManifestDigest string         `json:"manifestDigest"`
	Details        map[string]any `json:"details"`
}

// Log returns jobID's audit trail in the order it was recorded: the entries' times come from
// the clocks of the machines that wrote them, the order from the ledger. An unknown job matches
// ledger.ErrJobNotFound.
func Log(ctx context.Context, store *ledger.Store, jobID string) ([]LogEntry, error) {
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	job, err := store.JobsGet(ctx, jobID)
	if err != nil {
		return nil, err
	}
	entries, err := store.AuditList(ctx, jobID)
	if err != nil {
		return nil, err
	}
	log := make([]LogEntry, 0, len(entries))
	for _, e := range entries {
		reason, _ := e.Details["reason"].(string)
		if reason == "" && e.Action == "plan" {
			reason = job.Reason
		}
		details := e.Details
		if details == nil {
			details = map[string]any{}
		}
		log = append(log, LogEntry{ID: e.ID, At: e.At.UTC(), Actor: e.Actor, Action: e.Action, Reason: reason,
			ManifestDigest: e.ManifestDigest, Details: details})
	}
	return log, nil
}
