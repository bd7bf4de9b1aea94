package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

// Control is a pause, resume or cancel of a job from any process; the job's executor, if one
// runs, sees it at its next ledger poll.
type Control struct {
	JobID  string
	Actor  string
	Reason string
	Now    func() time.Time
}

// ControlResult says what a control did.
type ControlResult struct {
	JobID string `json:"jobId"`
	// Action is pause, resume or cancel; From and To the job's status before and after.
	Action string `json:"action"`
	From   string `json:"from"`
	To     string `json:"to"`
	// ExecutorAttached says whether an executor holds the job's lock: it takes the change within
	// a poll. Without one, a resumed job needs `replayctl execute` to go on publishing.
	ExecutorAttached bool     `json:"executorAttached"`
	Counts           Progress `json:"counts"`
}

// ErrNotControllable matches a pause, resume or cancel the job's status does not allow (exit 3).
var ErrNotControllable = errors.New("the job's status does not allow this")

var controls = map[string]struct {
	from []string
	to   string
	// done is the action's past tense, for the default reason ("cancelled by alice").
	done string
}{
	"pause":  {from: []string{ledger.JobExecuting}, to: ledger.JobPaused, done: "paused"},
	"resume": {from: []string{ledger.JobPaused}, to: ledger.JobExecuting, done: "resumed"},
	"cancel": {from: []string{ledger.JobPlanned, ledger.JobShadowing, ledger.JobShadowed, ledger.JobExecuting, ledger.JobPaused}, to: ledger.JobCancelled, done: "cancelled"},
}

// Pause stops the job's publishing; messages already published are still processed.
func Pause(ctx context.Context, store *ledger.Store, c Control) (*ControlResult, error) {
	return control(ctx, store, c, "pause")
}

// Resume lets a paused job publish again.
func Resume(ctx context.Context, store *ledger.Store, c Control) (*ControlResult, error) {
	return control(ctx, store, c, "resume")
}

// Cancel ends the job for good: publishing stops, its effect version stops being accepted by the
// consumer SDK (within its 5 s cache), and the targets keep the outcome they reached. Nothing
// already replayed is reverted.
func Cancel(ctx context.Context, store *ledger.Store, c Control) (*ControlResult, error) {
	return control(ctx, store, c, "cancel")
}

func control(ctx context.Context, store *ledger.Store, c Control, action string) (*ControlResult, error) {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Actor == "" {
		c.Actor = "unknown"
	}
	if err := manifest.ValidateText(c.Reason, manifest.MaxReasonRunes); err != nil {
		return nil, &OptionsError{Action: action, Problems: []string{"--reason " + err.Error()}}
	}
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	job, err := store.JobsGet(ctx, c.JobID)
	if err != nil {
		return nil, err
	}
	rule := controls[action]
	reason := c.Reason
	if reason == "" {
		reason = rule.done + " by " + c.Actor
	}
	err = pgx.BeginFunc(ctx, store.Pool, func(tx pgx.Tx) error {
		err := ledger.JobsTransition(ctx, tx, ledger.JobTransition{ID: job.ID, From: rule.from, To: rule.to, Reason: reason, By: c.Actor})
		if errors.Is(err, ledger.ErrJobStatus) {
			return fmt.Errorf("%w: %s %s: %w%s", ErrNotControllable, action, job.ID, err, controlHint(action))
		}
		if err != nil {
			return err
		}
		if action == "cancel" {
			if _, err := ledger.EffectVersionsSetState(ctx, tx, job.Consumer, job.EffectVersionTo, job.ID,
				[]string{ledger.EffectVersionExecuting}, ledger.EffectVersionCancelled); err != nil {
				return err
			}
			if _, err := ledger.JobTargetsSettle(ctx, tx, job.ID, job.Consumer, job.EffectVersionTo); err != nil {
				return err
			}
		}
		return ledger.AuditInsert(ctx, tx, ledger.AuditEntry{At: c.Now().UTC(), Actor: c.Actor, JobID: job.ID,
			ManifestDigest: job.ManifestDigest, Action: "job." + action,
			Details: map[string]any{"from": job.Status, "to": rule.to, "reason": reason}})
	})
	if err != nil {
		return nil, err
	}
	res := &ControlResult{JobID: job.ID, Action: action, From: job.Status, To: rule.to}
	res.ExecutorAttached, err = executorAttached(ctx, store, job.ID)
	if err != nil {
		return nil, err
	}
	if job, err = store.JobsGet(ctx, job.ID); err != nil {
		return nil, err
	}
	if res.Counts, _, err = readProgress(ctx, store, job); err != nil {
		return nil, err
	}
	return res, nil
}

func controlHint(action string) string {
	switch action {
	case "pause":
		return "; only an executing job can be paused"
	case "resume":
		return "; only a paused job can be resumed (an interrupted executing job continues with `replayctl execute`)"
	default:
		return "; a completed or cancelled job is final"
	}
}

// executorAttached reports whether an executor holds jobID's lock, by trying to take it.
func executorAttached(ctx context.Context, store *ledger.Store, jobID string) (bool, error) {
	release, err := store.ExecuteLock(ctx, jobID)
	if errors.Is(err, ledger.ErrExecuteRunning) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	release()
	return false, nil
}
