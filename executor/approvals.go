package executor

import (
	"context"
	"fmt"
	"strings"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/jobhistory"
	"github.com/replayctl/replayctl/jobtype"
)

// checkApprovals refuses a first run of a job that lacks the approvals its consumer's policy asks
// for (package approval), saying who may approve what. A run continuing an interrupted one is
// not asked again: its approvals held when it started.
func (s *session) checkApprovals(ctx context.Context, verdict VerdictRef) (*approval.State, error) {
	if s.job.Status != jobtype.Shadowed {
		return nil, nil
	}
	m := s.m
	policy, err := s.store.ApprovalPoliciesGet(ctx, m.Consumer)
	if err != nil {
		return nil, err
	}
	recs, err := s.store.ApprovalsForJob(ctx, m.ID)
	if err != nil {
		return nil, err
	}
	st := approval.Judge(policy, approval.Job{ID: m.ID, ManifestDigest: m.Digest, Planner: s.job.CreatedBy, PlanSignature: s.job.PlanSignature, VerdictID: verdict.ID,
		// Judged on what this run may spend: the budget (shadow's measure with this run's
		// --max-calls-over) when it is larger than the plan's guess.
		WriteForbidden: m.WriteForbidden, ExpectedCalls: max(m.ExpectedExternalCalls, s.budget.Budget)}, recs, s.opts.Now())
	if st.Satisfied {
		return &st, nil
	}
	if len(st.Rejections) > 0 {
		r := st.Rejections[0]
		return &st, s.refuse(ctx, GateApproval, "job %s was rejected by %s at %s: %s; plan again once it is addressed, or %s approves it after all with `replayctl approve %s --note ...`",
			m.ID, r.Actor, r.At.UTC().Format("2006-01-02T15:04:05Z"), r.Note, r.Actor, m.ID)
	}
	var have []string
	for _, a := range st.Approvals {
		have = append(have, a.Actor)
	}
	got := "none"
	if len(have) > 0 {
		got = strings.Join(have, ", ")
	}
	return &st, s.refuse(ctx, GateApproval, "job %s needs %d approval(s) before it runs (%s) and has %d (%s); anyone but its planner %s may approve this manifest (digest %s) and shadow verdict #%d with `replayctl approve %s --note TEXT`%s",
		m.ID, st.Required, st.Why, len(st.Approvals), got, s.job.CreatedBy, m.Digest, verdict.ID, m.ID, voidedNote(st.Voided))
}

func voidedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d earlier decision(s) no longer count (another digest or verdict, expired, or the planner's own)", n)
}

// checkAudit refuses a job whose audit entries do not hold their hash chain: an approval, a
// verdict or a plan entry changed, deleted or inserted around replayctl, so the record the gates
// above read cannot be trusted. It reads the job's entries and their predecessors, nothing more.
func (s *session) checkAudit(ctx context.Context) error {
	n, breaks, err := jobhistory.Breaks(ctx, s.store, s.m.ID)
	if err != nil {
		return err
	}
	if len(breaks) == 0 {
		return nil
	}
	b := breaks[0]
	return s.refuse(ctx, GateAudit, "the audit log of job %s does not hold at entry #%d (%s): %s; %d of its %d entries are affected. Find who wrote the ledger by hand (`replayctl log --verify %s`), then plan the job again",
		s.m.ID, b.ID, b.Action, b.Why, len(breaks), n, s.m.ID)
}
