// Package ledgerconformance is the behaviour every implementation of a ledger role interface
// shares: each suite runs against *ledger.Store on PostgreSQL and against the in-memory fake
// (package ledgerfake), so the two cannot drift (river's riverdrivertest).
package ledgerconformance

import (
	"testing"
	"time"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger"
)

// PolicySetter checks job.PolicySetter: open returns an empty store of its own for each subtest.
func PolicySetter(t *testing.T, open func(t *testing.T) job.PolicySetter) {
	audit := ledger.AuditEntry{Actor: "alice", Action: "policy.set"}
	t.Run("a consumer without a policy has none", func(t *testing.T) {
		store := open(t)
		p, err := store.ApprovalPoliciesGet(t.Context(), "billing")
		if err != nil || p != nil {
			t.Fatalf("got %+v, %v; want nil, nil", p, err)
		}
	})
	t.Run("a stored policy reads back as stored, dated by the store", func(t *testing.T) {
		store := open(t)
		over := int64(100)
		before := time.Now().Add(-time.Minute)
		want := approval.Policy{Consumer: "billing", Approvals: 2, UnlessWriteForbidden: true, WhenCallsOver: &over,
			ValidForSeconds: 3600, RequireSignedPlan: true, SetBy: "alice"}
		saved, err := store.ApprovalPoliciesSet(t.Context(), want, audit)
		if err != nil {
			t.Fatal(err)
		}
		if saved.SetAt.Before(before) {
			t.Errorf("SetAt %v, want the time it was stored", saved.SetAt)
		}
		got, err := store.ApprovalPoliciesGet(t.Context(), "billing")
		if err != nil || got == nil {
			t.Fatalf("got %+v, %v", got, err)
		}
		if got.Approvals != 2 || !got.UnlessWriteForbidden || got.WhenCallsOver == nil || *got.WhenCallsOver != 100 ||
			got.ValidForSeconds != 3600 || !got.RequireSignedPlan || got.SetBy != "alice" || !got.SetAt.Equal(saved.SetAt) {
			t.Errorf("read back %+v, want %+v with SetAt %v", got, want, saved.SetAt)
		}
	})
	t.Run("a policy without a lifetime gets the default one", func(t *testing.T) {
		store := open(t)
		saved, err := store.ApprovalPoliciesSet(t.Context(), approval.Policy{Consumer: "billing", Approvals: 1, SetBy: "alice"}, audit)
		if err != nil {
			t.Fatal(err)
		}
		if saved.ValidForSeconds != approval.DefaultValidFor.Seconds() {
			t.Errorf("ValidForSeconds %v, want the default %v", saved.ValidForSeconds, approval.DefaultValidFor.Seconds())
		}
	})
	t.Run("a second policy replaces the first and leaves other consumers alone", func(t *testing.T) {
		store := open(t)
		for _, p := range []approval.Policy{
			{Consumer: "billing", Approvals: 2, SetBy: "alice"},
			{Consumer: "mailer", Approvals: 1, SetBy: "alice"},
			{Consumer: "billing", Approvals: 0, SetBy: "bob"},
		} {
			if _, err := store.ApprovalPoliciesSet(t.Context(), p, audit); err != nil {
				t.Fatal(err)
			}
		}
		billing, err := store.ApprovalPoliciesGet(t.Context(), "billing")
		if err != nil || billing == nil || billing.Approvals != 0 || billing.SetBy != "bob" {
			t.Errorf("billing's policy %+v, %v; want bob's with no approvals", billing, err)
		}
		mailer, err := store.ApprovalPoliciesGet(t.Context(), "mailer")
		if err != nil || mailer == nil || mailer.Approvals != 1 {
			t.Errorf("mailer's policy %+v, %v; want its own, untouched", mailer, err)
		}
	})
}
