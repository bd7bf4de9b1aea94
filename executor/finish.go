package executor

import (
	"context"
	"fmt"

	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger"
)

// guardActor is recorded as who paused a job when a guard did.
const guardActor = "replayctl-guard"

// finish records how the run ended. Every target settled: the job completes, its effect version
// too, and the targets take their ledger outcome. A guard pauses the job (resume, then execute
// again). A cancel settles what happened so far. A stall leaves the job executing.
func (s *session) finish(ctx context.Context, r *Result, stop *Stop) error {
	ctx = context.WithoutCancel(ctx)
	m := s.m
	final := r.Final
	details := map[string]any{"published": r.Published, "deduplicated": r.Deduplicated,
		"landedUnacknowledged": r.LandedUnacknowledged, "republished": r.Republished, "progress": final}
	end := ledger.ExecuteEnd{JobID: m.ID, Consumer: m.Consumer, EffectVersion: m.EffectVersion.To}
	var err error
	switch {
	case stop == nil || (stop.Kind != StopCancelled && stop.Kind != StopStalled && final.Remaining == 0):
		if stop != nil {
			details["guard"] = stop
		}
		reason := fmt.Sprintf("%d completed, %d failed, %d uncertain, %d skipped", final.Completed, final.Failed, final.Uncertain, final.Skipped)
		end.Transition, end.Audit = job.Transition(job.EventComplete, m.ID, reason, s.opts.Actor), s.entry("execute.completed", details)
		err = s.store.ExecuteComplete(ctx, end)
	case stop.Kind == StopCancelled:
		details["stop"] = stop
		end.Audit = s.entry("execute.stopped", details)
		err = s.store.ExecuteCancelled(ctx, end)
	case stop.Kind == StopStalled:
		details["stop"] = stop
		s.audit(ctx, "execute.stalled", details)
	default:
		details["guard"] = stop
		end.Transition = job.Transition(job.EventGuard, m.ID, "guard "+string(stop.Kind)+": "+stop.Message, guardActor)
		end.Audit = s.entry("execute.guard_stopped", details)
		err = s.store.ExecuteGuardStopped(ctx, end)
	}
	if err != nil {
		return fmt.Errorf("record the end of job %s's run: %w", m.ID, err)
	}
	if err := s.fillReview(ctx, r); err != nil {
		return fmt.Errorf("the end of job %s's run is recorded, but reading its final figures failed: %w; see them with `replayctl status %s`", m.ID, err, m.ID)
	}
	return nil
}

func (s *session) entry(action string, details map[string]any) ledger.AuditEntry {
	return ledger.AuditEntry{At: s.opts.Now().UTC(), Actor: s.opts.Actor, JobID: s.m.ID, ManifestDigest: s.m.Digest,
		Action: action, Details: details}
}

// fillReview reads the final figures and the items to review.
func (s *session) fillReview(ctx context.Context, r *Result) error {
	rec, err := s.store.JobsGet(ctx, s.m.ID)
	if err != nil {
		return err
	}
	p, _, err := job.ReadProgress(ctx, s.store, rec)
	if err != nil {
		return err
	}
	p.Rate, p.ETA, p.CallBudget = r.Final.Rate, 0, s.callBudget()
	p.State = string(rec.Status)
	r.Final, r.JobStatus, r.FinishedAt = p, rec.Status, s.opts.Now().UTC()
	if r.Uncertain, err = s.store.EffectsJobItems(ctx, rec.Consumer, rec.EffectVersionTo, rec.ID, ledger.ReviewUncertain, maxListed); err != nil {
		return err
	}
	if r.NotPublished, err = s.store.JobTargetsNotPublished(ctx, rec.ID, rec.Consumer, rec.EffectVersionTo, maxListed); err != nil {
		return err
	}
	if r.Failed, err = s.store.EffectsJobItems(ctx, rec.Consumer, rec.EffectVersionTo, rec.ID, ledger.ReviewFailed, maxListed); err != nil {
		return err
	}
	if r.Uncertain == nil {
		r.Uncertain = []ledger.ReviewItem{}
	}
	if r.Failed == nil {
		r.Failed = []ledger.ReviewItem{}
	}
	return nil
}
