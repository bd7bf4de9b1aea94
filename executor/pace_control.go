package executor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

// PaceRequest changes a job's publish rate and in-flight cap, from any process: a running
// executor takes it at its next poll, the next execute starts with it. Nil fields keep their value.
type PaceRequest struct {
	JobID       string
	Rate        *float64
	MaxInFlight *int
	Actor       string
	Reason      string
	Now         func() time.Time
}

// PaceResult says what a pace changed.
type PaceResult struct {
	JobID  string         `json:"jobId"`
	Status jobtype.Status `json:"status"`
	// From and To are the stored pace before and after; a nil field was not set (the run's flags
	// or defaults were in force).
	From ledger.JobPace `json:"from"`
	To   ledger.JobPace `json:"to"`
	// ExecutorAttached says whether an executor runs the job: it takes the pace within a poll.
	ExecutorAttached bool `json:"executorAttached"`
}

// Pace stores a new pace for the job and audits it (job.pace, with the values before and after).
// A completed, cancelled or failed job is refused with job.ErrNotControllable; bad values with a
// *job.ControlError.
func Pace(ctx context.Context, store Ledger, r PaceRequest) (*PaceResult, error) {
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Actor == "" {
		r.Actor = "unknown"
	}
	var problems []string
	if r.Rate == nil && r.MaxInFlight == nil {
		problems = append(problems, "name --rate, --max-in-flight or both")
	}
	if v := r.Rate; v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0 || *v > maxRate) {
		problems = append(problems, fmt.Sprintf("--rate %v: must be 0 (no limit) or a number of events per second up to %d", *v, int(maxRate)))
	}
	if v := r.MaxInFlight; v != nil && (*v < 1 || *v > maxMaxInFlight) {
		problems = append(problems, fmt.Sprintf("--max-in-flight %d: must be between 1 and %d", *v, maxMaxInFlight))
	}
	if err := manifest.ValidateText(r.Reason, manifest.MaxReasonRunes); err != nil {
		problems = append(problems, "--reason "+err.Error())
	}
	if len(problems) > 0 {
		return nil, &job.ControlError{Action: "pace", Problems: problems}
	}
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	changed, err := store.JobsSetPace(ctx, ledger.PaceChange{JobID: r.JobID, Pace: ledger.JobPace{Rate: r.Rate, MaxInFlight: r.MaxInFlight},
		From: jobtype.Unfinished, Actor: r.Actor, Reason: r.Reason, At: r.Now().UTC()})
	if errors.Is(err, ledger.ErrJobStatus) {
		return nil, fmt.Errorf("%w: %w; a completed, cancelled or failed job is final: plan a new job for what is left", job.ErrNotControllable, err)
	}
	if err != nil {
		return nil, err
	}
	res := &PaceResult{JobID: r.JobID, Status: changed.Status, From: changed.Before, To: changed.After}
	if res.ExecutorAttached, err = store.ExecutorAttached(ctx, r.JobID); err != nil {
		return nil, err
	}
	return res, nil
}
