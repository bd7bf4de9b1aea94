package job

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/fault"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

// ErrNotApprovable matches an approval or rejection the job does not allow now: its planner's
// own, one already given, a job without a passing verdict for its manifest, a finished job (exit 3).
var ErrNotApprovable = fault.New(fault.Refused, "the job cannot take this decision")

// Decide is an approval or a rejection of a job (replayctl approve, reject).
type Decide struct {
	JobID    string
	Actor    string
	Decision approval.Decision
	// Note says why: what the approver checked, or what must change.
	Note string
	Now  func() time.Time
}

// DecideResult is the recorded decision and where the job stands after it.
type DecideResult struct {
	Decision approval.Record `json:"decision"`
	State    approval.State  `json:"approvals"`
}

// Record records d: bound to the job's manifest digest and its latest passing shadow verdict,
// valid for the consumer policy's lifetime, audited in the same transaction. The planner cannot
// decide on their own job, and an actor decides once per digest and verdict (a later decision of
// the other kind replaces theirs).
func Record(ctx context.Context, store *ledger.Store, d Decide) (*DecideResult, error) {
	if strings.TrimSpace(d.Note) == "" {
		return nil, &ControlError{Action: string(d.Decision), Problems: []string{"--note is required: say what you checked, or what must change"}}
	}
	if err := manifest.ValidateText(d.Note, manifest.MaxReasonRunes); err != nil {
		return nil, &ControlError{Action: string(d.Decision), Problems: []string{"--note: " + err.Error()}}
	}
	rec, err := store.JobsGet(ctx, d.JobID)
	if err != nil {
		return nil, err
	}
	if rec.Status != Shadowed {
		return nil, fmt.Errorf("%w: job %s is %s; a job is approved or rejected after a passing shadow verdict and before it runs", ErrNotApprovable, rec.ID, rec.Status)
	}
	if d.Actor == rec.CreatedBy {
		return nil, fmt.Errorf("%w: %s planned job %s, and a plan needs a second pair of eyes: another operator approves it", ErrNotApprovable, d.Actor, rec.ID)
	}
	v, err := store.ShadowVerdictsLatest(ctx, rec.ID)
	if errors.Is(err, ledger.ErrNoVerdict) || err == nil && (!v.Pass || v.ManifestDigest != rec.ManifestDigest) {
		return nil, fmt.Errorf("%w: job %s has no passing shadow verdict for its manifest %s; shadow it first", ErrNotApprovable, rec.ID, rec.ManifestDigest)
	}
	if err != nil {
		return nil, err
	}
	policy, err := store.ApprovalPoliciesGet(ctx, rec.Consumer)
	if err != nil {
		return nil, err
	}
	recs, err := store.ApprovalsForJob(ctx, rec.ID)
	if err != nil {
		return nil, err
	}
	aj := approval.Job{ID: rec.ID, ManifestDigest: rec.ManifestDigest, Planner: rec.CreatedBy, VerdictID: v.ID,
		WriteForbidden: rec.WriteForbidden, ExpectedCalls: rec.ExpectedExternalCalls}
	before := approval.Judge(policy, aj, recs, d.Now())
	for _, r := range append(before.Approvals, before.Rejections...) {
		if r.Actor == d.Actor && r.Decision == d.Decision {
			return nil, fmt.Errorf("%w: %s already %s job %s (manifest %s, verdict #%d) at %s; it counts once per actor",
				ErrNotApprovable, d.Actor, d.Decision, rec.ID, rec.ManifestDigest, v.ID, r.At.UTC().Format(time.RFC3339))
		}
	}
	validFor := approval.DefaultValidFor
	if policy != nil {
		validFor = policy.ValidFor()
	}
	r, err := store.ApprovalsRecord(ctx, approval.Record{JobID: rec.ID, ManifestDigest: rec.ManifestDigest, VerdictID: v.ID,
		Actor: d.Actor, Decision: d.Decision, Note: d.Note}, validFor.Seconds(), ledger.AuditEntry{
		Actor: d.Actor, JobID: rec.ID, ManifestDigest: rec.ManifestDigest, Action: "job." + string(d.Decision), Details: map[string]any{
			"verdictId": v.ID, "note": d.Note, "validForSeconds": validFor.Seconds()}})
	if err != nil {
		return nil, err
	}
	return &DecideResult{Decision: r, State: approval.Judge(policy, aj, append(recs, r), d.Now())}, nil
}

// Approvals is where jobID stands against its consumer's policy now, for status.
func Approvals(ctx context.Context, store *ledger.Store, rec ledger.Job, now time.Time) (*approval.State, error) {
	policy, err := store.ApprovalPoliciesGet(ctx, rec.Consumer)
	if err != nil {
		return nil, err
	}
	recs, err := store.ApprovalsForJob(ctx, rec.ID)
	if err != nil {
		return nil, err
	}
	if policy == nil && len(recs) == 0 {
		return nil, nil
	}
	var verdictID int64
	if v, err := store.ShadowVerdictsLatest(ctx, rec.ID); err == nil && v.Pass && v.ManifestDigest == rec.ManifestDigest {
		verdictID = v.ID
	} else if err != nil && !errors.Is(err, ledger.ErrNoVerdict) {
		return nil, err
	}
	st := approval.Judge(policy, approval.Job{ID: rec.ID, ManifestDigest: rec.ManifestDigest, Planner: rec.CreatedBy, VerdictID: verdictID,
		WriteForbidden: rec.WriteForbidden, ExpectedCalls: rec.ExpectedExternalCalls}, recs, now)
	return &st, nil
}
