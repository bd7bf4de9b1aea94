package jobhistory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/replayctl/replayctl/fault"
	"github.com/replayctl/replayctl/internal/suggest"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

// ErrBadFilter matches a list request that cannot select anything meaningful (an unknown status).
var ErrBadFilter = fault.New(fault.Invalid, "bad job filter")

// Statuses are the job statuses a filter may name (jobtype.Statuses as text, for flags and messages).
var Statuses = func() []string {
	names := make([]string, len(jobtype.Statuses))
	for i, s := range jobtype.Statuses {
		names[i] = string(s)
	}
	return names
}()

// ListOptions select jobs; zero fields do not filter.
type ListOptions struct {
	Consumer string
	Status   string
	// Since keeps jobs planned, or moved to another status, at or after it.
	Since time.Time
	// Limit caps the jobs listed, newest first; 0 lists all.
	Limit int
}

// JobSummary is one job as a list shows it. Its JSON names are a contract for scripts.
type JobSummary struct {
	ID            string                 `json:"jobId"`
	Consumer      string                 `json:"consumer"`
	Status        jobtype.Status         `json:"status"`
	Source        jobtype.SourceRef      `json:"source"`
	EffectVersion manifest.EffectVersion `json:"effectVersion"`
	Targets       int64                  `json:"targets"`
	Completed     int64                  `json:"completed"`
	Failed        int64                  `json:"failed"`
	Uncertain     int64                  `json:"uncertain"`
	Skipped       int64                  `json:"skipped"`
	Remaining     int64                  `json:"remaining"`
	// Reason and Ticket are the plan's; CreatedBy and CreatedAt who planned it and when.
	Reason    string    `json:"reason"`
	Ticket    string    `json:"ticket"`
	CreatedBy string    `json:"createdBy"`
	CreatedAt time.Time `json:"createdAt"`
	// StatusBy, StatusAt and StatusReason record the last change of status (pause, resume,
	// cancel, a guard's stop, the end); nil and empty before the first.
	StatusBy     string     `json:"statusBy,omitempty"`
	StatusAt     *time.Time `json:"statusAt,omitempty"`
	StatusReason string     `json:"statusReason,omitempty"`
}

// LastBy is who acted on the job last: who changed its status, else who planned it.
func (s JobSummary) LastBy() string {
	if s.StatusBy != "" {
		return s.StatusBy
	}
	return s.CreatedBy
}

// LastAt is when the job last changed: its last change of status, else its plan.
func (s JobSummary) LastAt() time.Time {
	if s.StatusAt != nil {
		return *s.StatusAt
	}
	return s.CreatedAt
}

// List returns the jobs o selects, newest first, with their counts read in one query. An unknown
// status matches ErrBadFilter; a consumer the ledger never heard of ledger.ErrUnknownConsumer
// (checked only when nothing was found, so a typo is not mistaken for an empty history).
func List(ctx context.Context, store *ledger.Store, o ListOptions) ([]JobSummary, error) {
	if o.Status != "" && !slices.Contains(Statuses, o.Status) {
		guess := ""
		if g := suggest.Phrase(suggest.Closest(o.Status, Statuses)); g != "" {
			guess = g + " "
		}
		return nil, fmt.Errorf("%w: no job status %q; %sthe statuses are %s", ErrBadFilter, o.Status, guess, strings.Join(Statuses, ", "))
	}
	if o.Limit < 0 {
		return nil, fmt.Errorf("%w: limit %d: want 0 (all) or more", ErrBadFilter, o.Limit)
	}
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	rows, err := store.JobsList(ctx, ledger.JobsFilter{Consumer: o.Consumer, Status: o.Status, Since: o.Since, Limit: o.Limit})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 && o.Consumer != "" {
		if err := store.CheckConsumer(ctx, o.Consumer); err != nil {
			return nil, err
		}
	}
	jobs := make([]JobSummary, 0, len(rows))
	for _, r := range rows {
		p := job.ProgressOfJob(r.Job, r.TargetCounts, r.Effects)
		s := JobSummary{ID: r.ID, Consumer: r.Consumer, Status: r.Status, Source: jobtype.SourceRef{Kind: r.SourceKind},
			EffectVersion: manifest.EffectVersion{From: r.EffectVersionFrom, To: r.EffectVersionTo},
			Targets:       r.Targets, Completed: p.Completed, Failed: p.Failed, Uncertain: p.Uncertain,
			Skipped: p.Skipped, Remaining: p.Remaining, Reason: r.Reason, Ticket: r.Ticket,
			CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(), StatusBy: r.StatusBy, StatusReason: r.StatusReason}
		if !r.StatusAt.IsZero() {
			at := r.StatusAt.UTC()
			s.StatusAt = &at
		}
		jobs = append(jobs, s)
	}
	return jobs, nil
}
