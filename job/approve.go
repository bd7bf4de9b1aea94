package job

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/fault"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/sshsig"
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
	// Signer signs the decision's statement (approve --sign-key); nil for an unsigned decision.
	Signer ssh.Signer
	// Statement and Signature are a decision signed elsewhere, such as with a hardware key through
	// ssh-keygen -Y sign (approve --statement FILE --signature FILE.sig).
	Statement, Signature []byte
}

// DecideResult is the recorded decision and where the job stands after it.
type DecideResult struct {
	Decision approval.Record `json:"decision"`
	State    approval.State  `json:"approvals"`
}

// statementSkew is how far a statement signed elsewhere may be dated from now: it takes a few
// minutes to carry a statement to a hardware key and back, and no longer.
const statementSkew = time.Hour

// decision is what Record and DecisionStatement share: the job, its verdict and policy.
type decision struct {
	rec      ledger.Job
	verdict  ledger.ShadowVerdict
	policy   *approval.Policy
	recs     []approval.Record
	validFor time.Duration
	// now is the database's clock, which dates signed statements as it dates unsigned rows.
	now time.Time
}

func loadDecision(ctx context.Context, store Decider, d Decide) (*decision, error) {
	if strings.TrimSpace(d.Note) == "" && d.Statement == nil {
		return nil, &ControlError{Action: string(d.Decision), Problems: []string{"--note is required: say what you checked, or what must change"}}
	}
	if err := manifest.ValidateText(d.Note, manifest.MaxReasonRunes); err != nil {
		return nil, &ControlError{Action: string(d.Decision), Problems: []string{"--note: " + err.Error()}}
	}
	rec, err := store.JobsGet(ctx, d.JobID)
	if err != nil {
		return nil, err
	}
	if rec.Status != jobtype.Shadowed {
		return nil, fmt.Errorf("%w: job %s is %s; a job is approved or rejected after a passing shadow verdict and before it runs", ErrNotApprovable, rec.ID, rec.Status)
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
	validFor := approval.DefaultValidFor
	if policy != nil {
		validFor = policy.ValidFor()
	}
	now, err := store.DatabaseNow(ctx)
	if err != nil {
		return nil, err
	}
	return &decision{rec: rec, verdict: v, policy: policy, recs: recs, validFor: validFor, now: now}, nil
}

// unsigned is the record d makes before any signature, dated now to the second.
func (dc *decision) unsigned(d Decide, actor string) approval.Record {
	at := dc.now.UTC().Truncate(time.Second)
	return approval.Record{JobID: dc.rec.ID, ManifestDigest: dc.rec.ManifestDigest, VerdictID: dc.verdict.ID, Actor: actor,
		Decision: d.Decision, Note: d.Note, At: at, ExpiresAt: at.Add(dc.validFor)}
}

// DecisionStatement returns the statement an approver signs elsewhere for d (approve
// --print-statement); nothing is recorded. With allowed signers in the policy the statement's
// actor must be the principal the key is listed under.
func DecisionStatement(ctx context.Context, store Decider, d Decide) ([]byte, error) {
	dc, err := loadDecision(ctx, store, d)
	if err != nil {
		return nil, err
	}
	return approval.Statement(dc.unsigned(d, d.Actor)), nil
}

// Record records d: bound to the job's manifest digest and its latest passing shadow verdict,
// valid for the consumer policy's lifetime, audited in the same transaction. The planner cannot
// decide on their own job, and an actor decides once per digest and verdict (a later decision of
// the other kind replaces theirs). A signed decision is verified before it is stored and is
// recorded under the principal its key is listed as; when the policy names allowed signers, an
// approval must be signed by one of them.
func Record(ctx context.Context, store Decider, d Decide) (*DecideResult, error) {
	dc, err := loadDecision(ctx, store, d)
	if err != nil {
		return nil, err
	}
	rec, v, policy := dc.rec, dc.verdict, dc.policy
	signers, err := policy.Signers()
	if err != nil {
		return nil, fmt.Errorf("%w: the approval policy of consumer %s: %v; set its allowed signers again with replayctl policy set", ErrNotApprovable, rec.Consumer, err)
	}
	r, err := dc.signed(d, signers)
	if err != nil {
		return nil, err
	}
	aj := approval.Job{ID: rec.ID, ManifestDigest: rec.ManifestDigest, Planner: rec.CreatedBy, PlanSignature: rec.PlanSignature, VerdictID: v.ID,
		WriteForbidden: rec.WriteForbidden, ExpectedCalls: rec.ExpectedExternalCalls}
	if r.Actor == rec.CreatedBy {
		return nil, fmt.Errorf("%w: %s planned job %s, and a plan needs a second pair of eyes: another operator approves it", ErrNotApprovable, r.Actor, rec.ID)
	}
	if err := notThePlannersKey(r, aj, signers); err != nil {
		return nil, err
	}
	before := approval.Judge(policy, aj, dc.recs, d.Now())
	for _, prev := range append(before.Approvals, before.Rejections...) {
		if prev.Actor == r.Actor && prev.Decision == d.Decision {
			return nil, fmt.Errorf("%w: %s already %s job %s (manifest %s, verdict #%d) at %s; it counts once per actor",
				ErrNotApprovable, r.Actor, d.Decision, rec.ID, rec.ManifestDigest, v.ID, prev.At.UTC().Format(time.RFC3339))
		}
	}
	details := map[string]any{"verdictId": v.ID, "note": r.Note, "validForSeconds": dc.validFor.Seconds()}
	if r.Signature != "" {
		details["signature"], details["signerKey"], details["statement"] = r.Signature, r.SignerKey, string(approval.Statement(r))
	}
	r, err = store.ApprovalsRecord(ctx, r, dc.validFor.Seconds(), ledger.AuditEntry{
		Actor: r.Actor, JobID: rec.ID, ManifestDigest: rec.ManifestDigest, Action: "job." + string(d.Decision), Details: details})
	if err != nil {
		return nil, err
	}
	return &DecideResult{Decision: r, State: approval.Judge(policy, aj, append(dc.recs, r), d.Now())}, nil
}

// signed returns d's record, signed when d carries a signer or a signature made elsewhere, and
// checks the signature against the job and the policy's signers.
func (dc *decision) signed(d Decide, signers sshsig.AllowedSigners) (approval.Record, error) {
	refuse := func(format string, args ...any) (approval.Record, error) {
		return approval.Record{}, fmt.Errorf("%w: "+format, append([]any{ErrNotApprovable}, args...)...)
	}
	var r approval.Record
	var pub ssh.PublicKey
	switch {
	case d.Statement != nil:
		var err error
		if r, err = approval.ParseStatement(d.Statement); err != nil {
			return refuse("--statement: %v", err)
		}
		switch {
		case r.JobID != dc.rec.ID || r.ManifestDigest != dc.rec.ManifestDigest:
			return refuse("the statement is for job %s, manifest %s, not job %s, manifest %s: a signature counts only for what it was made for", r.JobID, r.ManifestDigest, dc.rec.ID, dc.rec.ManifestDigest)
		case r.VerdictID != dc.verdict.ID:
			return refuse("the statement is for shadow verdict #%d; job %s's latest passing verdict is #%d: print and sign a new statement", r.VerdictID, dc.rec.ID, dc.verdict.ID)
		case r.Decision != d.Decision:
			return refuse("the statement says %s; this command records %s", r.Decision, d.Decision)
		case d.Note != "" && d.Note != r.Note:
			return refuse("--note differs from the statement's note: leave --note out, the signed note is recorded")
		case strings.TrimSpace(r.Note) == "":
			return refuse("the statement's note is empty: say what you checked, or what must change")
		}
		if err := manifest.ValidateText(r.Note, manifest.MaxReasonRunes); err != nil {
			return refuse("the statement's note: %v", err)
		}
		now := dc.now
		if r.At.Before(now.Add(-statementSkew)) || r.At.After(now.Add(5*time.Minute)) {
			return refuse("the statement is dated %s, more than %s from now: print and sign a new one", r.At.Format(time.RFC3339), statementSkew)
		}
		if r.ExpiresAt.After(r.At.Add(dc.validFor)) || !r.ExpiresAt.After(now) {
			return refuse("the statement expires %s: it must be after now and no later than %s after its time (the policy's validity)", r.ExpiresAt.Format(time.RFC3339), dc.validFor)
		}
		if pub, err = sshsig.Verify(d.Signature, approval.NamespaceApproval, d.Statement); err != nil {
			return refuse("--signature: %v", err)
		}
		r.Signature = string(d.Signature)
	case d.Signer != nil:
		pub = d.Signer.PublicKey()
		actor := d.Actor
		if signers != nil {
			p, ok := signers.Principal(pub, approval.NamespaceApproval, dc.now)
			if !ok {
				return refuse("key %s is not among consumer %s's allowed signers for approvals: ask who keeps the policy to add it (replayctl policy show)", ssh.FingerprintSHA256(pub), dc.rec.Consumer)
			}
			actor = p
		}
		r = dc.unsigned(d, actor)
		sig, err := sshsig.Sign(d.Signer, approval.NamespaceApproval, approval.Statement(r))
		if err != nil {
			return approval.Record{}, err
		}
		r.Signature = string(sig)
	default:
		if signers != nil && d.Decision == approval.Approved {
			return refuse("consumer %s's policy counts only signed approvals from its allowed signers: approve with --sign-key ~/.ssh/id_ed25519 (or --statement and --signature)", dc.rec.Consumer)
		}
		return dc.unsigned(d, d.Actor), nil
	}
	r.SignerKey = ssh.FingerprintSHA256(pub)
	if signers != nil {
		p, ok := signers.Principal(pub, approval.NamespaceApproval, r.At)
		if !ok || p != r.Actor {
			return refuse("key %s is not listed for %q in consumer %s's allowed signers for approvals", r.SignerKey, r.Actor, dc.rec.Consumer)
		}
	}
	return r, nil
}

// notThePlannersKey refuses a decision signed by the key that signed the plan, whatever name it
// is given under.
func notThePlannersKey(r approval.Record, j approval.Job, signers sshsig.AllowedSigners) error {
	if r.SignerKey == "" {
		return nil
	}
	pub, err := j.PlannerKey()
	if err != nil {
		return nil
	}
	if ssh.FingerprintSHA256(pub) == r.SignerKey {
		name, _ := signers.PrincipalOfKey(pub)
		return fmt.Errorf("%w: key %s signed the plan of job %s (%s), and a plan needs a second pair of eyes: another operator's key approves it",
			ErrNotApprovable, r.SignerKey, j.ID, cmp.Or(name, "its planner"))
	}
	return nil
}

// Approvals is where jobID stands against its consumer's policy now, for status.
func Approvals(ctx context.Context, store ApprovalReader, rec ledger.Job, now time.Time) (*approval.State, error) {
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
	st := approval.Judge(policy, approval.Job{ID: rec.ID, ManifestDigest: rec.ManifestDigest, Planner: rec.CreatedBy, PlanSignature: rec.PlanSignature, VerdictID: verdictID,
		WriteForbidden: rec.WriteForbidden, ExpectedCalls: rec.ExpectedExternalCalls}, recs, now)
	return &st, nil
}
