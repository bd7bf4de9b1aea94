package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/job"
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
	Action string     `json:"action"`
	From   job.Status `json:"from"`
	To     job.Status `json:"to"`
	// ExecutorAttached says whether an executor holds the job's lock: it takes the change within
	// a poll. Without one, a resumed job needs `replayctl execute` to go on publishing.
	ExecutorAttached bool     `json:"executorAttached"`
	Counts           Progress `json:"counts"`
}

// ErrNotControllable matches a pause, resume or cancel the job's status does not allow (exit 3).
var ErrNotControllable = errors.New("the job's status does not allow this")

// controlDone is each action's past tense, for the default reason ("cancelled by alice").
var controlDone = map[string]string{"pause": "paused", "resume": "resumed", "cancel": "cancelled"}

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
	rec, err := store.JobsGet(ctx, c.JobID)
	if err != nil {
		return nil, err
	}
	event := job.Event(action)
	reason := c.Reason
	if reason == "" {
		reason = controlDone[action] + " by " + c.Actor
	}
	err = pgx.BeginFunc(ctx, store.Pool, func(tx pgx.Tx) error {
		err := ledger.JobsTransition(ctx, tx, job.Transition(event, rec.ID, reason, c.Actor))
		if errors.Is(err, ledger.ErrJobStatus) {
			return fmt.Errorf("%w: %s %s: %w%s", ErrNotControllable, action, rec.ID, err, controlHint(action))
		}
		if err != nil {
			return err
		}
		if action == "cancel" {
			if _, err := ledger.EffectVersionsSetState(ctx, tx, rec.Consumer, rec.EffectVersionTo, rec.ID,
				[]string{ledger.EffectVersionExecuting}, ledger.EffectVersionCancelled); err != nil {
				return err
			}
			if _, err := ledger.JobTargetsSettle(ctx, tx, rec.ID, rec.Consumer, rec.EffectVersionTo); err != nil {
				return err
			}
		}
		return ledger.AuditInsert(ctx, tx, ledger.AuditEntry{At: c.Now().UTC(), Actor: c.Actor, JobID: rec.ID,
			ManifestDigest: rec.ManifestDigest, Action: "job." + action,
			Details: map[string]any{"from": rec.Status, "to": job.To(event), "reason": reason}})
	})
	if err != nil {
		return nil, err
	}
	res := &ControlResult{JobID: rec.ID, Action: action, From: rec.Status, To: job.To(event)}
	res.ExecutorAttached, err = executorAttached(ctx, store, rec.ID)
	if err != nil {
		return nil, err
	}
	if rec, err = store.JobsGet(ctx, rec.ID); err != nil {
		return nil, err
	}
	if res.Counts, _, err = readProgress(ctx, store, rec); err != nil {
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
