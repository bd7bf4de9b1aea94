package job_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/internal/testenv/ledgerfake"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

// shadowedJob is a store holding job-1, planned by alice and shadowed with a passing verdict on
// its manifest, under a policy asking for approvals; the ledger is the in-memory fake.
func shadowedJob(t *testing.T, approvals int) *ledgerfake.Decisions {
	t.Helper()
	store := ledgerfake.NewDecisions()
	store.AddJob(ledgertest.Job{ID: "job-1", CreatedBy: "alice", ExpectedExternalCalls: 100})
	store.AddVerdict("job-1", "sha256:job-1", true)
	if _, err := store.ApprovalPoliciesSet(t.Context(), approval.Policy{Consumer: "billing", Approvals: approvals, SetBy: "carol"},
		ledger.AuditEntry{Actor: "carol", Action: "policy.set"}); err != nil {
		t.Fatal(err)
	}
	return store
}

func decide(t *testing.T, store job.Decider, actor string, d approval.Decision) (*job.DecideResult, error) {
	t.Helper()
	return job.Record(t.Context(), store, job.Decide{JobID: "job-1", Actor: actor, Decision: d, Note: "checked the sample", Now: time.Now})
}

// An approval counts once per actor, never the planner's, and two of two satisfy the policy.
func TestAnApprovalCountsOncePerActorAndNeverThePlanners(t *testing.T) {
	t.Parallel()
	store := shadowedJob(t, 2)
	if _, err := decide(t, store, "alice", approval.Approved); !errors.Is(err, job.ErrNotApprovable) || !strings.Contains(err.Error(), "second pair of eyes") {
		t.Fatalf("the planner's own approval: %v, want ErrNotApprovable naming the second pair of eyes", err)
	}
	r, err := decide(t, store, "bob", approval.Approved)
	if err != nil || len(r.State.Approvals) != 1 || r.State.Satisfied {
		t.Fatalf("bob's approval: %+v, %v; want one of two counted", r, err)
	}
	if _, err := decide(t, store, "bob", approval.Approved); !errors.Is(err, job.ErrNotApprovable) || !strings.Contains(err.Error(), "counts once per actor") {
		t.Fatalf("bob again: %v, want ErrNotApprovable", err)
	}
	r, err = decide(t, store, "dave", approval.Approved)
	if err != nil || len(r.State.Approvals) != 2 || !r.State.Satisfied {
		t.Fatalf("dave's approval: %+v, %v; want two of two, satisfied", r, err)
	}
	if got := store.Audit(); len(got) != 3 || got[2].Action != "job.approved" || got[2].JobID != "job-1" {
		t.Errorf("audit %+v, want the policy and the two approvals", got)
	}
	// A rejection by an approver replaces their approval: the job is no longer satisfied.
	r, err = decide(t, store, "dave", approval.Rejected)
	if err != nil || r.State.Satisfied || len(r.State.Rejections) != 1 {
		t.Fatalf("dave's rejection: %+v, %v; want it standing, the job not satisfied", r, err)
	}
}

// A job is decided on only while it is shadowed with a passing verdict for its manifest.
func TestADecisionNeedsAPassingVerdictOnTheJobsManifest(t *testing.T) {
	t.Parallel()
	for name, seed := range map[string]func(*ledgerfake.Decisions){
		"planned, never shadowed": func(s *ledgerfake.Decisions) {
			s.AddJob(ledgertest.Job{ID: "job-1", Status: jobtype.Planned})
		},
		"a failing verdict": func(s *ledgerfake.Decisions) {
			s.AddJob(ledgertest.Job{ID: "job-1"})
			s.AddVerdict("job-1", "sha256:job-1", false)
		},
		"a verdict on another manifest": func(s *ledgerfake.Decisions) {
			s.AddJob(ledgertest.Job{ID: "job-1"})
			s.AddVerdict("job-1", "sha256:edited", true)
		},
		"executing already": func(s *ledgerfake.Decisions) {
			s.AddJob(ledgertest.Job{ID: "job-1", Status: jobtype.Executing})
			s.AddVerdict("job-1", "sha256:job-1", true)
		},
	} {
		store := ledgerfake.NewDecisions()
		seed(store)
		if _, err := decide(t, store, "bob", approval.Approved); !errors.Is(err, job.ErrNotApprovable) {
			t.Errorf("%s: %v, want ErrNotApprovable", name, err)
		}
	}
	store := ledgerfake.NewDecisions()
	if _, err := decide(t, store, "bob", approval.Approved); !errors.Is(err, ledger.ErrJobNotFound) {
		t.Errorf("an unknown job: %v, want ErrJobNotFound", err)
	}
}

// A decision says why; a policy naming its approvers by key counts no unsigned approval.
func TestANoteIsRequiredAndAListedSignerPolicyRefusesUnsignedApprovals(t *testing.T) {
	t.Parallel()
	store := shadowedJob(t, 1)
	_, err := job.Record(t.Context(), store, job.Decide{JobID: "job-1", Actor: "bob", Decision: approval.Approved, Note: "  ", Now: time.Now})
	if ce, ok := errors.AsType[*job.ControlError](err); !ok || !strings.Contains(ce.Error(), "--note is required") {
		t.Fatalf("an empty note: %v, want a ControlError asking for --note", err)
	}
	signer := newSigner(t)
	if _, err := store.ApprovalPoliciesSet(t.Context(), approval.Policy{Consumer: "billing", Approvals: 1, SetBy: "carol",
		AllowedSigners: allowedSigner("bob", approval.NamespaceApproval, signer)}, ledger.AuditEntry{}); err != nil {
		t.Fatal(err)
	}
	if _, err := decide(t, store, "bob", approval.Approved); !errors.Is(err, job.ErrNotApprovable) || !strings.Contains(err.Error(), "--sign-key") {
		t.Fatalf("an unsigned approval under listed signers: %v, want a refusal pointing at --sign-key", err)
	}
	r, err := job.Record(t.Context(), store, job.Decide{JobID: "job-1", Actor: "whoever", Decision: approval.Approved,
		Note: "checked the sample", Now: time.Now, Signer: signer})
	if err != nil || r.Decision.Actor != "bob" || !r.State.Verified || !r.State.Satisfied {
		t.Fatalf("bob's signed approval: %+v, %v; want it recorded under bob, verified, satisfying the policy", r, err)
	}
}
