// Package approval decides whether a replay job has the approvals its consumer's policy asks for
// before execute may run it. An approval is bound to the job's manifest digest and to the shadow
// verdict it was given after: a re-plan (another digest) or a new verdict voids it, and so does
// time. It imports nothing of the project's adapters: the ledger stores its records and the
// executor asks Judge.
package approval

import (
	"fmt"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/replayctl/replayctl/sshsig"
)

// DefaultValidFor is how long an approval counts when the policy does not say.
const DefaultValidFor = 24 * time.Hour

// Policy is a consumer's approval policy (replayctl policy set).
type Policy struct {
	Consumer string `json:"consumer"`
	// Approvals is how many actors other than the planner must approve a job.
	Approvals int `json:"approvals"`
	// UnlessWriteForbidden waives the approvals for a write-forbidden job (no external write).
	UnlessWriteForbidden bool `json:"unlessWriteForbidden"`
	// WhenCallsOver, when set, asks for approvals only when the job expects more external calls.
	WhenCallsOver *int64 `json:"whenCallsOver"`
	// ValidFor is how long an approval counts after it was given.
	ValidForSeconds float64 `json:"validForSeconds"`
	// AllowedSigners is the consumer's approvers in OpenSSH's allowed_signers format; with it only
	// approvals whose SSH signature verifies for a listed principal count.
	AllowedSigners string `json:"allowedSigners,omitempty"`
	// RequireSignedPlan refuses a job whose planner did not sign its manifest (plan --sign-key).
	RequireSignedPlan bool      `json:"requireSignedPlan"`
	SetBy             string    `json:"setBy"`
	SetAt             time.Time `json:"setAt"`
}

// Signers parses the policy's allowed signers; nil without a list.
func (p *Policy) Signers() (sshsig.AllowedSigners, error) {
	if p == nil || p.AllowedSigners == "" {
		return nil, nil
	}
	return sshsig.ParseAllowedSigners([]byte(p.AllowedSigners))
}

// ValidFor is the policy's approval lifetime.
func (p *Policy) ValidFor() time.Duration {
	if p.ValidForSeconds <= 0 {
		return DefaultValidFor
	}
	return time.Duration(p.ValidForSeconds * float64(time.Second))
}

// Decision is what an actor said of a job.
type Decision string

// Decisions.
const (
	Approved Decision = "approved"
	Rejected Decision = "rejected"
)

// Record is one approval or rejection as the ledger keeps it.
type Record struct {
	ID             int64     `json:"id"`
	JobID          string    `json:"jobId"`
	ManifestDigest string    `json:"manifestDigest"`
	VerdictID      int64     `json:"verdictId"`
	Actor          string    `json:"actor"`
	Decision       Decision  `json:"decision"`
	Note           string    `json:"note"`
	At             time.Time `json:"at"`
	ExpiresAt      time.Time `json:"expiresAt"`
	// Signature is the SSHSIG signature over Statement(record), armoured; empty when unsigned.
	Signature string `json:"-"`
	// SignerKey is the SHA256 fingerprint of the key that signed it, as the signature says.
	SignerKey string `json:"signerKey,omitempty"`
}

// Job is what Judge needs of a job.
type Job struct {
	ID, ManifestDigest string
	// Planner is who planned it: never an approver of it.
	Planner string
	// PlanSignature is the planner's SSHSIG signature over ManifestStatement(ID, ManifestDigest),
	// when plan ran with --sign-key: then "not the planner" compares keys, not names.
	PlanSignature string
	// VerdictID is its latest passing shadow verdict (0: none).
	VerdictID      int64
	WriteForbidden bool
	// ExpectedCalls is what a calls threshold is judged on: execute passes the larger of the
	// plan's estimate and the budget it will enforce (shadow's measure with --max-calls-over);
	// elsewhere it is the plan's estimate.
	ExpectedCalls int64
}

// State is where a job stands against its consumer's policy.
type State struct {
	// Required is how many approvals the policy asks of this job; Why says why (or why none).
	Required int    `json:"required"`
	Why      string `json:"why"`
	// Approvals are the approvals that count; Rejections the rejections that stand.
	Approvals  []Record `json:"approvals"`
	Rejections []Record `json:"rejections"`
	// Voided counts decisions that no longer count: for another digest or verdict, or expired.
	Voided int `json:"voided"`
	// Verified says the policy names its approvers by key (allowed signers), so every decision
	// counted was signed by a listed key other than the planner's; false means names are taken
	// as typed. Unverified counts the approvals left out for a missing or bad signature.
	Verified   bool `json:"verified"`
	Unverified int  `json:"unverified"`
	// Satisfied says execute may run the job.
	Satisfied bool `json:"satisfied"`
}

// Required is how many approvals p asks of j, and why.
func Required(p *Policy, j Job) (int, string) {
	switch {
	case p == nil || p.Approvals == 0:
		return 0, "the consumer has no approval policy"
	case p.UnlessWriteForbidden && j.WriteForbidden:
		return 0, "the job is write-forbidden, and the policy waives approvals for it"
	case p.WhenCallsOver != nil && j.ExpectedCalls <= *p.WhenCallsOver:
		return 0, fmt.Sprintf("the job may make %d external calls, not over the policy's %d", j.ExpectedCalls, *p.WhenCallsOver)
	}
	why := fmt.Sprintf("the policy of consumer %s asks for %d", p.Consumer, p.Approvals)
	if p.WhenCallsOver != nil {
		why += fmt.Sprintf(" when a job may make over %d external calls (this one %d)", *p.WhenCallsOver, j.ExpectedCalls)
	}
	return p.Approvals, why
}

// Judge says whether j has what p asks, counting from recs (j's decisions, oldest first) each
// actor's latest decision on j's digest, the planner's aside. An approval counts only for j's
// current verdict and until it expires; a rejection stands until its author approves after it,
// whatever verdict came since: shadowing again voids approvals, never rejections.
//
// With allowed signers in p, an approval counts only when its signature verifies over its
// statement for a key the list names (at the time it was given) under the principal recorded as
// its actor, and that key and principal are not the planner's; a rejection stands signed or not
// (it can only stop a replay). p's list is read now: a key removed from it voids its approvals.
func Judge(p *Policy, j Job, recs []Record, now time.Time) State {
	st := State{Approvals: []Record{}, Rejections: []Record{}}
	st.Required, st.Why = Required(p, j)
	signers, err := p.Signers()
	if err != nil {
		st.Why += fmt.Sprintf("; its allowed signers cannot be read (%v), so no approval counts: set them again with replayctl policy set", err)
	}
	checked := p != nil && p.AllowedSigners != ""
	st.Verified = checked && err == nil
	planner := plannerIdentity(signers, j)
	if checked && p.RequireSignedPlan && planner.key == "" {
		st.Why += "; the policy requires a signed plan and this job's manifest is not signed by a listed key: plan it again with --sign-key"
		st.Verified = false
	}
	latest := map[string]Record{}
	var order []string
	for _, r := range recs {
		if r.ManifestDigest != j.ManifestDigest || r.Actor == j.Planner || (planner.name != "" && r.Actor == planner.name) {
			st.Voided++
			continue
		}
		if _, seen := latest[r.Actor]; !seen {
			order = append(order, r.Actor)
		} else {
			st.Voided++
		}
		latest[r.Actor] = r
	}
	for _, actor := range order {
		r := latest[actor]
		switch {
		case r.Decision == Rejected:
			st.Rejections = append(st.Rejections, r)
		case r.VerdictID != j.VerdictID || !now.Before(r.ExpiresAt):
			st.Voided++
		case checked && (!st.Verified || !signedBy(signers, r, planner.key)):
			st.Unverified++
		default:
			st.Approvals = append(st.Approvals, r)
		}
	}
	if !checked && st.Required > 0 {
		st.Why += "; approvers are named, not verified: give the policy --allowed-signers to count only signed approvals"
	}
	st.Satisfied = len(st.Rejections) == 0 && len(st.Approvals) >= st.Required && (!checked || st.Verified || st.Required == 0)
	return st
}

type identity struct{ key, name string }

// PlannerKey is the key that signed j's manifest (plan --sign-key), checked over j's ID and
// digest; an error says the signature is missing or does not verify.
func (j Job) PlannerKey() (ssh.PublicKey, error) {
	if j.PlanSignature == "" {
		return nil, fmt.Errorf("job %s: its plan is not signed", j.ID)
	}
	return sshsig.Verify([]byte(j.PlanSignature), NamespaceManifest, ManifestStatement(j.ID, j.ManifestDigest))
}

// plannerIdentity is the key that signed j's manifest and the principal the signers give it;
// empty without a signature that verifies.
func plannerIdentity(signers sshsig.AllowedSigners, j Job) identity {
	pub, err := j.PlannerKey()
	if err != nil {
		return identity{}
	}
	id := identity{key: ssh.FingerprintSHA256(pub)}
	id.name, _ = signers.PrincipalOfKey(pub)
	return id
}

// signedBy says r's signature verifies over its statement for a key the signers list under r's
// actor at r's time, other than plannerKey.
func signedBy(signers sshsig.AllowedSigners, r Record, plannerKey string) bool {
	if r.Signature == "" {
		return false
	}
	pub, err := sshsig.Verify([]byte(r.Signature), NamespaceApproval, Statement(r))
	if err != nil {
		return false
	}
	if plannerKey != "" && ssh.FingerprintSHA256(pub) == plannerKey {
		return false
	}
	principal, ok := signers.Principal(pub, NamespaceApproval, r.At)
	return ok && principal == r.Actor
}
