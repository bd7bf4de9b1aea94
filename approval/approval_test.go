package approval_test

import (
	"testing"
	"time"

	"github.com/replayctl/replayctl/approval"
)

func TestAnApprovalCountsOnlyForItsDigestAndVerdictFromAnotherActorUntilItExpires(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	p := &approval.Policy{Consumer: "billing", Approvals: 2}
	j := approval.Job{ID: "j1", ManifestDigest: "sha256:a", Planner: "alice", VerdictID: 7, ExpectedCalls: 100}
	rec := func(actor string, d approval.Decision, digest string, verdict int64, age time.Duration) approval.Record {
		return approval.Record{Actor: actor, Decision: d, ManifestDigest: digest, VerdictID: verdict, At: now.Add(-age), ExpiresAt: now.Add(-age + 24*time.Hour)}
	}
	cases := []struct {
		name      string
		recs      []approval.Record
		approvals int
		satisfied bool
	}{
		{"none", nil, 0, false},
		{"the planner's own", []approval.Record{rec("alice", approval.Approved, "sha256:a", 7, time.Hour), rec("bob", approval.Approved, "sha256:a", 7, time.Hour)}, 1, false},
		{"one actor twice", []approval.Record{rec("bob", approval.Approved, "sha256:a", 7, 2*time.Hour), rec("bob", approval.Approved, "sha256:a", 7, time.Hour)}, 1, false},
		{"two others", []approval.Record{rec("bob", approval.Approved, "sha256:a", 7, time.Hour), rec("carol", approval.Approved, "sha256:a", 7, time.Hour)}, 2, true},
		{"another verdict", []approval.Record{rec("bob", approval.Approved, "sha256:a", 6, time.Hour), rec("carol", approval.Approved, "sha256:a", 7, time.Hour)}, 1, false},
		{"a re-plan", []approval.Record{rec("bob", approval.Approved, "sha256:b", 7, time.Hour), rec("carol", approval.Approved, "sha256:a", 7, time.Hour)}, 1, false},
		{"expired", []approval.Record{rec("bob", approval.Approved, "sha256:a", 7, 25*time.Hour), rec("carol", approval.Approved, "sha256:a", 7, time.Hour)}, 1, false},
		{"a rejection stands", []approval.Record{rec("bob", approval.Approved, "sha256:a", 7, time.Hour), rec("carol", approval.Approved, "sha256:a", 7, time.Hour), rec("dave", approval.Rejected, "sha256:a", 7, time.Hour)}, 2, false},
		{"a rejection survives a new verdict", []approval.Record{rec("bob", approval.Approved, "sha256:a", 7, time.Hour), rec("carol", approval.Approved, "sha256:a", 7, time.Hour), rec("dave", approval.Rejected, "sha256:a", 6, 3*time.Hour)}, 2, false},
		{"a rejection does not expire", []approval.Record{rec("bob", approval.Approved, "sha256:a", 7, time.Hour), rec("carol", approval.Approved, "sha256:a", 7, time.Hour), rec("dave", approval.Rejected, "sha256:a", 7, 30*time.Hour)}, 2, false},
		{"a rejection withdrawn by its actor's approval", []approval.Record{rec("bob", approval.Approved, "sha256:a", 7, time.Hour), rec("carol", approval.Rejected, "sha256:a", 7, 2*time.Hour), rec("carol", approval.Approved, "sha256:a", 7, time.Hour)}, 2, true},
	}
	for _, c := range cases {
		st := approval.Judge(p, j, c.recs, now)
		if len(st.Approvals) != c.approvals || st.Satisfied != c.satisfied || st.Required != 2 {
			t.Errorf("%s: %d approvals, satisfied %v, required %d; want %d, %v, 2", c.name, len(st.Approvals), st.Satisfied, st.Required, c.approvals, c.satisfied)
		}
	}
}

func TestThePolicyWaivesWriteForbiddenAndSmallJobsWhenItSaysSo(t *testing.T) {
	k := int64(500)
	p := &approval.Policy{Consumer: "billing", Approvals: 1, UnlessWriteForbidden: true, WhenCallsOver: &k}
	for _, c := range []struct {
		job  approval.Job
		want int
	}{
		{approval.Job{WriteForbidden: true, ExpectedCalls: 10_000}, 0},
		{approval.Job{ExpectedCalls: 500}, 0},
		{approval.Job{ExpectedCalls: 501}, 1},
	} {
		if got, why := approval.Required(p, c.job); got != c.want || why == "" {
			t.Errorf("%+v: %d required (%s), want %d", c.job, got, why, c.want)
		}
	}
	if got, _ := approval.Required(nil, approval.Job{ExpectedCalls: 1e6}); got != 0 {
		t.Errorf("no policy: %d required", got)
	}
}
