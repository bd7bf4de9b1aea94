package executor

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

// runStateFresh is how old an executor's stored run state may be for status to call it attached.
const runStateFresh = 15 * time.Second

// statusListed is how many uncertain and failed items status names.
const statusListed = 20

// StatusReport is where a job stands, readable from any terminal while it runs.
type StatusReport struct {
	JobID          string                 `json:"jobId"`
	Consumer       string                 `json:"consumer"`
	Status         jobtype.Status         `json:"status"`
	StatusReason   string                 `json:"statusReason,omitempty"`
	StatusBy       string                 `json:"statusBy,omitempty"`
	StatusAt       *time.Time             `json:"statusAt,omitempty"`
	ManifestDigest string                 `json:"manifestDigest"`
	Reason         string                 `json:"reason"`
	Ticket         string                 `json:"ticket,omitempty"`
	EffectVersion  manifest.EffectVersion `json:"effectVersion"`
	WriteForbidden bool                   `json:"writeForbidden"`
	// Source.Kind is dlq or backfill (jobtype.SourceDLQ, jobtype.SourceBackfill).
	Source        jobtype.SourceRef `json:"source"`
	ExpectedCalls int64             `json:"expectedExternalCalls"`
	Counts        Progress          `json:"counts"`
	// Pace is the rate and in-flight cap stored with the job (the last run's, or `replayctl
	// pace`'s); nil fields were never set.
	Pace ledger.JobPace `json:"pace"`
	// Budget is where Counts.CallBudget came from: the last run's budget, or, before any run,
	// the budget a run would have at the default --max-calls-over; nil without a passing verdict.
	Budget *CallBudget `json:"callBudgetSource,omitempty"`
	// Executor is the attached executor's live state: attached when it holds the job's lock.
	ExecutorAttached bool                `json:"executorAttached"`
	Executor         *RunState           `json:"executor,omitempty"`
	Uncertain        []ledger.ReviewItem `json:"uncertainTargets"`
	Failed           []ledger.ReviewItem `json:"failedTargets"`
	// NotPublished lists the targets that failed before they reached the consumer, with why.
	NotPublished []ledger.NotPublished `json:"notPublishedTargets"`
	// Instances is each consumer instance's share of the job's ledger rows, by lease owner.
	Instances []ledger.OwnerShare `json:"instances"`
	// Durable is the durable's counts from JetStream (StatusOf); DurableNote says why they are
	// missing when they were asked for.
	Durable     *DurableState `json:"durable,omitempty"`
	DurableNote string        `json:"durableNote,omitempty"`
	// Approvals is where the job stands against its consumer's approval policy; nil when the
	// consumer has none and nobody decided on the job.
	Approvals *approval.State `json:"approvals,omitempty"`
}

// Status reads jobID's report.
func Status(ctx context.Context, store Ledger, jobID string) (*StatusReport, error) {
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	rec, err := store.JobsGet(ctx, jobID)
	if err != nil {
		return nil, err
	}
	p, _, err := job.ReadProgress(ctx, store, rec)
	if err != nil {
		return nil, err
	}
	r := &StatusReport{JobID: rec.ID, Consumer: rec.Consumer, Status: rec.Status, StatusReason: rec.StatusReason,
		StatusBy: rec.StatusBy, ManifestDigest: rec.ManifestDigest, Reason: rec.Reason, Ticket: rec.Ticket,
		EffectVersion:  manifest.EffectVersion{From: rec.EffectVersionFrom, To: rec.EffectVersionTo},
		WriteForbidden: rec.WriteForbidden, Source: jobtype.SourceRef{Kind: rec.SourceKind}, ExpectedCalls: rec.ExpectedExternalCalls, Counts: p,
		Pace: rec.Pace}
	if !rec.StatusAt.IsZero() {
		at := rec.StatusAt.UTC()
		r.StatusAt = &at
	}
	r.Counts.State = string(rec.Status)
	if r.ExecutorAttached, err = store.ExecutorAttached(ctx, rec.ID); err != nil {
		return nil, err
	}
	if len(rec.RunState) > 0 {
		var rs RunState
		if json.Unmarshal(rec.RunState, &rs) == nil {
			rs.At = rec.RunStateAt.UTC()
			r.Executor = &rs
			if r.ExecutorAttached && time.Since(rec.RunStateAt) < runStateFresh {
				r.Counts.Rate, r.Counts.ETA, r.Counts.State, r.Counts.Reason = rs.Rate, rs.ETA, rs.State, rs.Reason
				if rec.Status == jobtype.Paused && rs.State != string(jobtype.Paused) {
					// The pause is recorded; the executor stops publishing at its next poll.
					r.Counts.State, r.Counts.Reason = "pausing", "the executor stops publishing at its next poll"
				}
			}
		}
	}
	if job.Final(rec.Status) {
		// The executor writes its last run state ("stopped") after the job's final status: a
		// report read between the two would end a watch on a line that does not say how it ended.
		r.Counts.State, r.Counts.Reason = string(rec.Status), ""
	}
	if err := fillBudget(ctx, store, rec, r); err != nil {
		return nil, err
	}
	if r.Approvals, err = job.Approvals(ctx, store, rec, time.Now()); err != nil {
		return nil, err
	}
	if r.Uncertain, err = store.EffectsJobItems(ctx, rec.Consumer, rec.EffectVersionTo, rec.ID, ledger.ReviewUncertain, statusListed); err != nil {
		return nil, err
	}
	if r.Failed, err = store.EffectsJobItems(ctx, rec.Consumer, rec.EffectVersionTo, rec.ID, ledger.ReviewFailed, statusListed); err != nil {
		return nil, err
	}
	if r.NotPublished, err = store.JobTargetsNotPublished(ctx, rec.ID, rec.Consumer, rec.EffectVersionTo, statusListed); err != nil {
		return nil, err
	}
	if r.Instances, err = store.EffectsJobOwners(ctx, rec.Consumer, rec.EffectVersionTo, rec.ID); err != nil {
		return nil, err
	}
	return r, nil
}

// fillBudget sets r's call budget: the one the last run enforced, as it stored it with its run
// state; before any run, the one a run would enforce at the default --max-calls-over, from the
// latest verdict when it passed for the job's digest.
func fillBudget(ctx context.Context, store Ledger, job ledger.Job, r *StatusReport) error {
	if r.Executor != nil && r.Executor.Budget.Source != "" {
		b := r.Executor.Budget
		r.Budget, r.Counts.CallBudget = &b, b.Budget
		return nil
	}
	v, err := store.ShadowVerdictsLatest(ctx, job.ID)
	if errors.Is(err, ledger.ErrNoVerdict) {
		return nil
	}
	if err != nil {
		return err
	}
	if !v.Pass || v.ManifestDigest != job.ManifestDigest {
		return nil
	}
	b := budgetOf(v, job.ExpectedExternalCalls, job.Targets, DefaultGuards().MaxCallsOver)
	r.Budget, r.Counts.CallBudget = &b, b.Budget
	return nil
}
