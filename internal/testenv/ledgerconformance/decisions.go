package ledgerconformance

import (
	"errors"
	"testing"
	"time"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

// Seeder writes what job.Decider only reads: jobs and their shadow verdicts.
type Seeder interface {
	AddJob(j ledgertest.Job)
	AddVerdict(jobID, digest string, pass bool) int64
}

// Decider checks job.Decider: open returns an empty store of its own for each subtest, and the
// seeder that writes into it.
func Decider(t *testing.T, open func(t *testing.T) (job.Decider, Seeder)) {
	audit := ledger.AuditEntry{Actor: "bob", Action: "job.approved"}
	t.Run("an unknown job is not found", func(t *testing.T) {
		store, _ := open(t)
		if _, err := store.JobsGet(t.Context(), "job-none"); !errors.Is(err, ledger.ErrJobNotFound) {
			t.Fatalf("got %v, want ErrJobNotFound", err)
		}
	})
	t.Run("a job reads back as seeded", func(t *testing.T) {
		store, seed := open(t)
		seed.AddJob(ledgertest.Job{ID: "job-1", Consumer: "mailer", Status: jobtype.Planned, ManifestDigest: "sha256:m1",
			CreatedBy: "alice", WriteForbidden: true, ExpectedExternalCalls: 42, PlanSignature: "sig"})
		j, err := store.JobsGet(t.Context(), "job-1")
		if err != nil {
			t.Fatal(err)
		}
		if j.ID != "job-1" || j.Consumer != "mailer" || j.Status != jobtype.Planned || j.ManifestDigest != "sha256:m1" ||
			j.CreatedBy != "alice" || !j.WriteForbidden || j.ExpectedExternalCalls != 42 || j.PlanSignature != "sig" {
			t.Errorf("read back %+v", j)
		}
	})
	t.Run("the latest verdict is the last recorded, passing or not", func(t *testing.T) {
		store, seed := open(t)
		seed.AddJob(ledgertest.Job{ID: "job-1"})
		if _, err := store.ShadowVerdictsLatest(t.Context(), "job-1"); !errors.Is(err, ledger.ErrNoVerdict) {
			t.Fatalf("before any verdict: %v, want ErrNoVerdict", err)
		}
		first := seed.AddVerdict("job-1", "sha256:job-1", true)
		second := seed.AddVerdict("job-1", "sha256:other", false)
		v, err := store.ShadowVerdictsLatest(t.Context(), "job-1")
		if err != nil || v.ID != second || second <= first || v.Pass || v.ManifestDigest != "sha256:other" || v.JobID != "job-1" {
			t.Errorf("latest %+v, %v; want #%d, failing, for sha256:other", v, err, second)
		}
	})
	t.Run("an unsigned decision is dated by the store and listed with its job's, oldest first", func(t *testing.T) {
		store, seed := open(t)
		seed.AddJob(ledgertest.Job{ID: "job-1"})
		seed.AddJob(ledgertest.Job{ID: "job-2"})
		v := seed.AddVerdict("job-1", "sha256:job-1", true)
		before := time.Now().Add(-time.Second)
		dbNow, err := store.DatabaseNow(t.Context())
		if err != nil || dbNow.Before(before) || dbNow.After(time.Now().Add(time.Second)) {
			t.Fatalf("DatabaseNow %v, %v; want about now", dbNow, err)
		}
		record := func(jobID, actor string, d approval.Decision) approval.Record {
			r, err := store.ApprovalsRecord(t.Context(), approval.Record{JobID: jobID, ManifestDigest: "sha256:" + jobID, VerdictID: v,
				Actor: actor, Decision: d, Note: "checked"}, 3600, audit)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		a := record("job-1", "bob", approval.Approved)
		record("job-2", "carol", approval.Approved)
		b := record("job-1", "dave", approval.Rejected)
		if a.ID <= 0 || b.ID <= a.ID {
			t.Errorf("IDs %d then %d, want increasing", a.ID, b.ID)
		}
		if a.At.Before(before) || a.At.After(time.Now().Add(time.Second)) || a.ExpiresAt.Sub(a.At) != time.Hour {
			t.Errorf("dated %v, expires %v; want now and an hour later", a.At, a.ExpiresAt)
		}
		recs, err := store.ApprovalsForJob(t.Context(), "job-1")
		if err != nil || len(recs) != 2 || recs[0].ID != a.ID || recs[1].ID != b.ID {
			t.Fatalf("job-1's decisions %+v, %v; want bob's then dave's", recs, err)
		}
		if r := recs[1]; r.Actor != "dave" || r.Decision != approval.Rejected || r.Note != "checked" || r.VerdictID != v ||
			r.ManifestDigest != "sha256:job-1" || !r.At.Equal(b.At) {
			t.Errorf("read back %+v, want %+v", r, b)
		}
	})
	t.Run("a signed decision keeps the times its signature covers", func(t *testing.T) {
		store, seed := open(t)
		seed.AddJob(ledgertest.Job{ID: "job-1"})
		v := seed.AddVerdict("job-1", "sha256:job-1", true)
		at := time.Now().Add(-10 * time.Minute).UTC().Truncate(time.Second)
		r, err := store.ApprovalsRecord(t.Context(), approval.Record{JobID: "job-1", ManifestDigest: "sha256:job-1", VerdictID: v,
			Actor: "bob", Decision: approval.Approved, Note: "checked", At: at, ExpiresAt: at.Add(2 * time.Hour),
			Signature: "-----BEGIN SSH SIGNATURE-----", SignerKey: "SHA256:key"}, 3600, audit)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := store.ApprovalsForJob(t.Context(), "job-1")
		if err != nil || len(recs) != 1 {
			t.Fatalf("%+v, %v", recs, err)
		}
		for _, got := range []approval.Record{r, recs[0]} {
			if !got.At.Equal(at) || !got.ExpiresAt.Equal(at.Add(2*time.Hour)) || got.Signature == "" || got.SignerKey != "SHA256:key" {
				t.Errorf("%+v; want the statement's times and its signature", got)
			}
		}
	})
}
