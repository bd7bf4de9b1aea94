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
)

// The controls apply to a job that never ran too: a planned job can be cancelled (and not paused
// or resumed), with its audit entry, and nothing but PostgreSQL is needed to say so.
func TestControlsOfAPlannedJob(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	err := ledger.JobsInsert(ctx, pgtest.Pool(t, store), ledger.Job{
		ID: "job-planned", Consumer: "billing", Status: jobtype.Planned, ManifestDigest: "sha256:abc",
		EffectVersionFrom: 1, EffectVersionTo: 2, Reason: "replay the outage", Stream: "DLQ_BILLING",
		Targets: 4, LedgerStateDigest: "sha256:def", CreatedBy: "alice", CreatedAt: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	c := job.Control{JobID: "job-planned", Actor: "bob"}

	for _, tc := range []struct {
		name string
		ctl  func() (*job.ControlResult, error)
		hint string
	}{
		{"pause", func() (*job.ControlResult, error) { return job.Pause(ctx, store, c) }, "only an executing job can be paused"},
		{"resume", func() (*job.ControlResult, error) { return job.Resume(ctx, store, c) }, "only a paused job can be resumed"},
	} {
		if _, err := tc.ctl(); !errors.Is(err, job.ErrNotControllable) || !errors.Is(err, ledger.ErrJobStatus) ||
			!strings.Contains(err.Error(), tc.hint) || !strings.Contains(err.Error(), "planned") {
			t.Errorf("%s of a planned job: err = %v, want ErrNotControllable naming the status and %q", tc.name, err, tc.hint)
		}
	}
	bad := c
	bad.Reason = "wrong filter\x1b[2J"
	if _, err := job.Cancel(ctx, store, bad); !errors.Is(err, job.ErrBadControl) || !strings.HasPrefix(err.Error(), "cancel refused:\n  --reason") {
		t.Errorf("a reason with a terminal escape: err = %v, want ErrBadControl", err)
	}

	res, err := job.Cancel(ctx, store, c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != "cancel" || res.From != jobtype.Planned || res.To != jobtype.Cancelled || res.ExecutorAttached || res.Counts.Targets != 4 {
		t.Errorf("cancel: %+v", res)
	}
	rec, err := store.JobsGet(ctx, "job-planned")
	if err != nil || rec.Status != jobtype.Cancelled || rec.StatusReason != "cancelled by bob" || rec.StatusBy != "bob" {
		t.Fatalf("after cancel: %+v, %v", rec, err)
	}
	entries, err := store.AuditList(ctx, "job-planned")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Action != "job.cancel" || entries[0].Actor != "bob" {
		t.Fatalf("audit %+v, want one job.cancel by bob", entries)
	}
	if _, err := job.Cancel(ctx, store, c); !errors.Is(err, job.ErrNotControllable) || !strings.Contains(err.Error(), "is final") {
		t.Errorf("a second cancel: err = %v, want ErrNotControllable saying the job is final", err)
	}
}
