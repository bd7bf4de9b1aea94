package approval_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/sshsig"
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

// A signature is good only for the record it was made over: moved to another job, digest or
// note it does not count, and neither does the planner's key or an unlisted one.
func TestASignedApprovalCountsOnlyForWhatItWasMadeOver(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	key := func() ssh.Signer {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ssh.NewSignerFromKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	bob, planner, eve := key(), key(), key()
	p := &approval.Policy{Consumer: "billing", Approvals: 1,
		AllowedSigners: "bob " + sshsig.AuthorizedKey(bob.PublicKey()) + "\nalice " + sshsig.AuthorizedKey(planner.PublicKey()) + "\n"}
	planSig, err := sshsig.Sign(planner, approval.NamespaceManifest, approval.ManifestStatement("j1", "sha256:a"))
	if err != nil {
		t.Fatal(err)
	}
	j := approval.Job{ID: "j1", ManifestDigest: "sha256:a", Planner: "mallory", PlanSignature: string(planSig), VerdictID: 7, ExpectedCalls: 10}
	signed := func(s ssh.Signer, actor string, edit func(*approval.Record)) approval.Record {
		r := approval.Record{JobID: "j1", ManifestDigest: "sha256:a", VerdictID: 7, Actor: actor, Decision: approval.Approved,
			Note: "checked", At: now.Add(-time.Hour), ExpiresAt: now.Add(time.Hour)}
		sig, err := sshsig.Sign(s, approval.NamespaceApproval, approval.Statement(r))
		if err != nil {
			t.Fatal(err)
		}
		r.Signature = string(sig)
		if edit != nil {
			edit(&r)
		}
		return r
	}
	cases := []struct {
		name   string
		rec    approval.Record
		counts bool
	}{
		{"bob's own", signed(bob, "bob", nil), true},
		{"moved to another job", signed(bob, "bob", func(r *approval.Record) { r.JobID = "j2" }), false},
		{"moved to another verdict's statement", signed(bob, "bob", func(r *approval.Record) { r.Note = "checked everything" }), false},
		{"under another name", signed(bob, "carol", nil), false},
		{"the planner's key under a listed name", signed(planner, "alice", nil), false},
		{"an unlisted key", signed(eve, "bob", nil), false},
		{"unsigned", func() approval.Record { r := signed(bob, "bob", nil); r.Signature = ""; return r }(), false},
	}
	for _, c := range cases {
		st := approval.Judge(p, j, []approval.Record{c.rec}, now)
		if st.Satisfied != c.counts || !st.Verified {
			t.Errorf("%s: satisfied %v (verified %v, %d unverified, %d voided), want %v", c.name, st.Satisfied, st.Verified, st.Unverified, st.Voided, c.counts)
		}
	}
	without := *p
	without.AllowedSigners = "alice " + sshsig.AuthorizedKey(planner.PublicKey()) + "\n"
	if st := approval.Judge(&without, j, []approval.Record{signed(bob, "bob", nil)}, now); st.Satisfied {
		t.Error("bob's approval still counts after his key left the allowed signers")
	}
}
