package job

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/replayctl/replayctl/fault"
	"github.com/replayctl/replayctl/jobtype"
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
	Action string         `json:"action"`
	From   jobtype.Status `json:"from"`
	To     jobtype.Status `json:"to"`
	// ExecutorAttached says whether an executor holds the job's lock: it takes the change within
	// a poll. Without one, a resumed job needs `replayctl execute` to go on publishing.
	ExecutorAttached bool     `json:"executorAttached"`
	Counts           Progress `json:"counts"`
}

var (
	// ErrNotControllable matches a pause, resume or cancel the job's status does not allow (exit 3).
	ErrNotControllable = fault.New(fault.Refused, "the job's status does not allow this")

	// ErrBadControl matches a pause, resume or cancel request that is itself wrong (exit 2).
	ErrBadControl = fault.New(fault.Invalid, "invalid job control")
)

// ControlError lists every problem of a pause, resume or cancel request.
type ControlError struct {
	Action   string
	Problems []string
}

// Error lists the problems, one per line.
func (e *ControlError) Error() string {
	return e.Action + " refused:\n  " + strings.Join(e.Problems, "\n  ")
}

// Is makes a ControlError match ErrBadControl.
func (e *ControlError) Is(target error) bool { return target == ErrBadControl }

// Kind is fault.Invalid, as ErrBadControl's.
func (e *ControlError) Kind() fault.Kind { return fault.Invalid }

// Pause stops the job's publishing; messages already published are still processed.
func Pause(ctx context.Context, store Controller, c Control) (*ControlResult, error) {
	return control(ctx, store, c, EventPause)
}

// Resume lets a paused job publish again.
func Resume(ctx context.Context, store Controller, c Control) (*ControlResult, error) {
	return control(ctx, store, c, EventResume)
}

// Cancel ends the job for good, whatever it reached (planned, shadowed, executing, paused):
// publishing stops, its effect version stops being accepted by the consumer SDK (within its 5 s
// cache), and the targets keep the outcome they reached. Nothing already replayed is reverted.
func Cancel(ctx context.Context, store Controller, c Control) (*ControlResult, error) {
	return control(ctx, store, c, EventCancel)
}

// controlDone is each control's past tense, for the default reason ("cancelled by alice").
var controlDone = map[Event]string{EventPause: "paused", EventResume: "resumed", EventCancel: "cancelled"}

func control(ctx context.Context, store Controller, c Control, event Event) (*ControlResult, error) {
	action := string(event)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Actor == "" {
		c.Actor = "unknown"
	}
	if err := manifest.ValidateText(c.Reason, manifest.MaxReasonRunes); err != nil {
		return nil, &ControlError{Action: action, Problems: []string{"--reason " + err.Error()}}
	}
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	rec, err := store.JobsGet(ctx, c.JobID)
	if err != nil {
		return nil, err
	}
	reason := c.Reason
	if reason == "" {
		reason = controlDone[event] + " by " + c.Actor
	}
	err = store.JobControl(ctx, ledger.JobControl{
		Transition: Transition(event, rec.ID, reason, c.Actor),
		EndReplay:  event == EventCancel, Consumer: rec.Consumer, EffectVersion: rec.EffectVersionTo,
		Audit: ledger.AuditEntry{At: c.Now().UTC(), Actor: c.Actor, JobID: rec.ID, ManifestDigest: rec.ManifestDigest,
			Action: "job." + action, Details: map[string]any{"from": rec.Status, "to": To(event), "reason": reason}},
	})
	if errors.Is(err, ledger.ErrJobStatus) {
		return nil, fmt.Errorf("%w: %s %s: %w%s", ErrNotControllable, action, rec.ID, err, controlHint(event))
	}
	if err != nil {
		return nil, err
	}
	res := &ControlResult{JobID: rec.ID, Action: action, From: rec.Status, To: To(event)}
	if res.ExecutorAttached, err = store.ExecutorAttached(ctx, rec.ID); err != nil {
		return nil, err
	}
	if rec, err = store.JobsGet(ctx, rec.ID); err != nil {
		return nil, err
	}
	if res.Counts, _, err = ReadProgress(ctx, store, rec); err != nil {
		return nil, err
	}
	return res, nil
}

func controlHint(event Event) string {
	switch event {
	case EventPause:
		return "; only an executing job can be paused"
	case EventResume:
		return "; only a paused job can be resumed (an interrupted executing job continues with `replayctl execute`)"
	default:
		return "; a completed or cancelled job is final"
	}
}
