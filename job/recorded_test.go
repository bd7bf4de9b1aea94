package job_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

func TestCheckRecorded(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	recorded := "sha256:" + strings.Repeat("a", 64)
	err := ledger.JobsInsert(ctx, pgtest.Pool(t, store), ledger.Job{
		ID: "job-recorded", Consumer: "billing", Status: jobtype.Shadowed, ManifestDigest: recorded,
		EffectVersionFrom: 1, EffectVersionTo: 2, Reason: "replay the outage", Stream: "DLQ_BILLING",
		Targets: 3, LedgerStateDigest: "sha256:def", CreatedBy: "alice", CreatedAt: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}

	rec, err := job.CheckRecorded(ctx, store, &manifest.Manifest{ID: "job-recorded", Digest: recorded})
	if err != nil || rec.ID != "job-recorded" || rec.Status != jobtype.Shadowed {
		t.Fatalf("the recorded manifest: job %+v, err %v", rec, err)
	}

	for _, tc := range []struct {
		name       string
		m          manifest.Manifest
		is, isNot  error
		recordedAs string
		says       []string
	}{
		{"no such job", manifest.Manifest{ID: "job-elsewhere", Digest: recorded}, job.ErrNoJob, job.ErrOtherDigest, "",
			[]string{"the ledger has no job job-elsewhere", "re-run `replayctl plan`", "--database-url"}},
		{"another digest", manifest.Manifest{ID: "job-recorded", Digest: "sha256:" + strings.Repeat("b", 64)}, job.ErrOtherDigest, job.ErrNoJob, recorded,
			[]string{"job job-recorded was recorded with digest " + recorded, "this manifest has sha256:bbb", "re-run `replayctl plan`"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := job.CheckRecorded(ctx, store, &tc.m)
			if rec.ID != "" {
				t.Errorf("returned job %s with the refusal", rec.ID)
			}
			if !errors.Is(err, job.ErrNotRecorded) || !errors.Is(err, tc.is) || errors.Is(err, tc.isNot) || errors.Is(err, ledger.ErrJobNotFound) {
				t.Fatalf("err = %v, want %v and not %v", err, tc.is, tc.isNot)
			}
			re, ok := errors.AsType[*job.RecordedError](err)
			if !ok || re.JobID != tc.m.ID || re.Digest != tc.m.Digest || re.Recorded != tc.recordedAs {
				t.Fatalf("err = %#v", err)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
		})
	}
}
