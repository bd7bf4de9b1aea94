package job_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/internal/testenv/ledgerfake"
	"github.com/replayctl/replayctl/job"
)

func newSigner(t *testing.T) ssh.Signer {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func allowedSigner(principal, namespaces string, s ssh.Signer) string {
	return fmt.Sprintf("%s namespaces=%q %s", principal, namespaces, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey()))))
}

// Lowering a policy whose allowed signers name a policy admin needs that admin's signature;
// without signers a lowering goes through but says nothing proved who made it. The ledger is the
// in-memory fake: no PostgreSQL.
func TestPolicySetRefusesALoweringNoPolicyAdminSigned(t *testing.T) {
	t.Parallel()
	admin, stranger := newSigner(t), newSigner(t)
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	signers := allowedSigner("carol", approval.NamespacePolicy, admin) + "\n" + allowedSigner("bob", "replayctl-approval", stranger)
	store := ledgerfake.NewPolicies()
	set := func(p approval.Policy, signer ssh.Signer) (*job.SetPolicyResult, error) {
		p.Consumer, p.SetBy = "billing", "alice"
		return job.PolicySet(t.Context(), store, job.SetPolicy{Policy: p, Signer: signer, Now: now})
	}

	if _, err := set(approval.Policy{Approvals: 2, AllowedSigners: signers}, nil); err != nil {
		t.Fatalf("a first policy needs no signature: %v", err)
	}
	if r, err := set(approval.Policy{Approvals: 3, AllowedSigners: signers}, nil); err != nil || len(r.Lowered) != 0 {
		t.Fatalf("raising the approvals: %+v, %v; want it stored, nothing lowered", r, err)
	}
	for name, signer := range map[string]ssh.Signer{"unsigned": nil, "signed by a key not listed for policy changes": stranger} {
		_, err := set(approval.Policy{Approvals: 1, AllowedSigners: signers}, signer)
		if !errors.Is(err, job.ErrPolicyLowering) {
			t.Errorf("%s lowering: %v, want ErrPolicyLowering", name, err)
		}
	}
	if p, _ := store.ApprovalPoliciesGet(t.Context(), "billing"); p == nil || p.Approvals != 3 {
		t.Fatalf("after refused lowerings the policy is %+v, want the 3 approvals kept", p)
	}
	r, err := set(approval.Policy{Approvals: 1, AllowedSigners: signers}, admin)
	if err != nil || r.Principal != "carol" || r.Unverified || len(r.Lowered) != 1 {
		t.Fatalf("the admin's signed lowering: %+v, %v; want it stored, signed by carol", r, err)
	}
	last := store.Audit()[len(store.Audit())-1]
	if last.Details["principal"] != "carol" || last.Details["signature"] == nil || last.Details["lowered"] == nil {
		t.Errorf("the audit entry of the signed lowering holds %v, want its principal, signature and what it lowered", last.Details)
	}
	for _, e := range store.Audit() {
		if got := fmt.Sprint(e.Details["allowedSigners"]); strings.Contains(got, "namespaces=") || !strings.Contains(got, "carol SHA256:") {
			t.Errorf("the audit entry's allowedSigners is %s, want principals and fingerprints, not the file", got)
		}
	}

	// Signers removed (itself a lowering the admin signs), then a lowering proves no one.
	if _, err := set(approval.Policy{Approvals: 1}, admin); err != nil {
		t.Fatal(err)
	}
	r, err = set(approval.Policy{Approvals: 0}, nil)
	if err != nil || !r.Unverified {
		t.Fatalf("lowering a policy without signers: %+v, %v; want it stored and marked unverified", r, err)
	}
}
