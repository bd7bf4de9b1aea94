package job

import (
	"context"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/fault"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/sshsig"
)

// ErrPolicyLowering matches a policy change that asks less of a consumer's jobs without the
// signature of a policy admin the current policy names (exit 3).
var ErrPolicyLowering = fault.New(fault.Refused, "lowering the approval policy needs a policy admin's signature")

// SetPolicy is a change of a consumer's approval policy (replayctl policy set).
type SetPolicy struct {
	Policy approval.Policy
	// Signer signs the change (policy set --sign-key); required to lower a policy whose allowed
	// signers name policy admins.
	Signer ssh.Signer
	Now    time.Time
}

// SetPolicyResult is the stored policy and what the change lowered.
type SetPolicyResult struct {
	Policy approval.Policy
	// Lowered lists how the change asks less than the policy it replaced; empty when it does not.
	Lowered []string
	// SignedBy names the key (and the principal it is listed as) that signed the change.
	SignerKey, Principal string
	// Unverified says a lowering went through on a name alone: the policy it replaced had no
	// allowed signers, so nothing could prove who lowered it.
	Unverified bool
}

// PolicySet stores s.Policy with its audit entry. Lowering a policy whose allowed signers exist
// needs a signature over the new policy by a key listed there with namespaces including
// replayctl-policy (a policy admin); the signature and key go into the audit entry.
func PolicySet(ctx context.Context, store PolicySetter, s SetPolicy) (*SetPolicyResult, error) {
	p := s.Policy
	if _, err := p.Signers(); err != nil {
		return nil, fmt.Errorf("%w: --allowed-signers: %v", ErrBadPolicy, err)
	}
	current, err := store.ApprovalPoliciesGet(ctx, p.Consumer)
	if err != nil {
		return nil, err
	}
	res := &SetPolicyResult{Lowered: approval.Lowers(current, &p)}
	details := map[string]any{"consumer": p.Consumer, "approvals": p.Approvals, "unlessWriteForbidden": p.UnlessWriteForbidden,
		"whenCallsOver": p.WhenCallsOver, "validForSeconds": p.ValidFor().Seconds(), "requireSignedPlan": p.RequireSignedPlan,
		"allowedSigners": signersSummary(p)}
	if len(res.Lowered) > 0 {
		details["lowered"] = res.Lowered
	}
	admins, _ := current.Signers()
	if s.Signer != nil {
		pub := s.Signer.PublicKey()
		res.SignerKey = ssh.FingerprintSHA256(pub)
		sig, err := sshsig.Sign(s.Signer, approval.NamespacePolicy, approval.PolicyStatement(p, s.Now))
		if err != nil {
			return nil, err
		}
		details["signature"], details["signerKey"] = string(sig), res.SignerKey
		details["statement"] = string(approval.PolicyStatement(p, s.Now))
		res.Principal, _ = admins.NamedPrincipal(pub, approval.NamespacePolicy, s.Now)
		if res.Principal != "" {
			details["principal"] = res.Principal
		}
	}
	if len(res.Lowered) > 0 && admins != nil && res.Principal == "" {
		return nil, fmt.Errorf("%w: the change to consumer %s's policy lowers it (%s); sign it with --sign-key using a key its current allowed signers list with namespaces=\"%s\" (a policy admin), or raise it instead",
			ErrPolicyLowering, p.Consumer, strings.Join(res.Lowered, "; "), approval.NamespacePolicy)
	}
	if len(res.Lowered) > 0 && admins == nil {
		res.Unverified = true
		details["unverified"] = true
	}
	saved, err := store.ApprovalPoliciesSet(ctx, p, ledger.AuditEntry{Actor: p.SetBy, Action: "policy.set", Details: details})
	if err != nil {
		return nil, err
	}
	res.Policy = saved
	return res, nil
}

// ErrBadPolicy matches a policy that cannot be stored as given (exit 2).
var ErrBadPolicy = fault.New(fault.Invalid, "invalid approval policy")

// signersSummary names the allowed signers in the audit entry: principals and key fingerprints,
// not the whole file.
func signersSummary(p approval.Policy) []string {
	signers, _ := p.Signers()
	out := []string{}
	for _, sg := range signers {
		out = append(out, strings.Join(sg.Principals, ",")+" "+ssh.FingerprintSHA256(sg.Key))
	}
	return out
}
