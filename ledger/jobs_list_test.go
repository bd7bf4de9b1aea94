package ledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

func TestJobsListCountsEachJobInOneQuery(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	execJobRows(t, store)
	// job-c and job-other have effects under version 2; job-old is older, of another consumer.
	for i, j := range []ledger.Job{sampleJob("job-c"), sampleJob("job-other"), sampleJob("job-old")} {
		j.CreatedAt = time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC).Add(-time.Duration(i) * 24 * time.Hour)
		if j.ID == "job-old" {
			j.Consumer = "shipping"
		}
		if err := ledger.JobsInsert(ctx, store.Pool(), j); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ledger.JobTargetsInsert(ctx, store.Pool(), []ledger.JobTarget{
		{JobID: "job-c", EventID: "ok", StreamSeq: 1, OriginalSubject: "billing.charge", FailureReason: "timeout", Status: "published"},
		{JobID: "job-c", EventID: "gone", StreamSeq: 2, OriginalSubject: "billing.charge", FailureReason: "timeout", Status: "failed"},
	}); err != nil {
		t.Fatal(err)
	}

	all, err := store.JobsList(ctx, ledger.JobsFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].ID != "job-c" || all[1].ID != "job-other" || all[2].ID != "job-old" {
		t.Fatalf("jobs %+v, want job-c, job-other, job-old newest first", all)
	}
	// The aggregate agrees with the per-job count status reads.
	for _, l := range all {
		want, err := store.EffectsJobCounts(ctx, l.Consumer, l.EffectVersionTo, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		if l.Effects != want {
			t.Errorf("%s: effects %+v, want %+v", l.ID, l.Effects, want)
		}
	}
	if c := all[0].TargetCounts; c["published"] != 1 || c["failed"] != 1 || len(c) != 2 {
		t.Errorf("job-c target counts %v", c)
	}
	if len(all[2].TargetCounts) != 0 {
		t.Errorf("job-old target counts %v, want none", all[2].TargetCounts)
	}

	for name, tc := range map[string]struct {
		f    ledger.JobsFilter
		want []string
	}{
		"consumer": {ledger.JobsFilter{Consumer: "shipping"}, []string{"job-old"}},
		"since":    {ledger.JobsFilter{Since: time.Date(2025, 3, 3, 0, 0, 0, 0, time.UTC)}, []string{"job-c", "job-other"}},
		"limit":    {ledger.JobsFilter{Limit: 1}, []string{"job-c"}},
		"status":   {ledger.JobsFilter{Status: "completed"}, nil},
	} {
		got, err := store.JobsList(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, l := range got {
			ids = append(ids, l.ID)
		}
		if len(ids) != len(tc.want) || (len(ids) > 0 && ids[0] != tc.want[0]) || (len(ids) > 1 && ids[1] != tc.want[1]) {
			t.Errorf("%s: %v, want %v", name, ids, tc.want)
		}
	}
}

func TestJobsSetPaceAuditsBeforeAndAfterAndRefusesFinishedJobs(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	if err := ledger.JobsInsert(ctx, store.Pool(), sampleJob("job-p")); err != nil {
		t.Fatal(err)
	}
	rate, inFlight := 5.0, 7
	got, err := store.JobsSetPace(ctx, ledger.PaceChange{JobID: "job-p", Pace: ledger.JobPace{Rate: &rate},
		From: jobtype.Unfinished, Actor: "erin", Reason: "slow down"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Before.Rate != nil || got.After.Rate == nil || *got.After.Rate != 5 || got.After.MaxInFlight != nil || got.Status != "planned" {
		t.Fatalf("first pace %+v", got)
	}
	got, err = store.JobsSetPace(ctx, ledger.PaceChange{JobID: "job-p", Pace: ledger.JobPace{MaxInFlight: &inFlight},
		From: jobtype.Unfinished, Actor: "erin"})
	if err != nil || *got.Before.Rate != 5 || *got.After.Rate != 5 || *got.After.MaxInFlight != 7 {
		t.Fatalf("second pace %+v, %v: the rate must keep its value", got, err)
	}
	job, err := store.JobsGet(ctx, "job-p")
	if err != nil || *job.Pace.Rate != 5 || *job.Pace.MaxInFlight != 7 {
		t.Fatalf("stored pace %+v, %v", job.Pace, err)
	}
	entries, err := store.AuditList(ctx, "job-p")
	if err != nil || len(entries) != 2 || entries[0].Action != "job.pace" || entries[0].Actor != "erin" ||
		entries[0].Details["reason"] != "slow down" || entries[0].Details["to"].(map[string]any)["rate"] != 5.0 {
		t.Fatalf("audit %+v, %v", entries, err)
	}

	if _, err := store.Pool().Exec(ctx, `update jobs set status = 'completed' where id = 'job-p'`); err != nil {
		t.Fatal(err)
	}
	_, err = store.JobsSetPace(ctx, ledger.PaceChange{JobID: "job-p", Pace: ledger.JobPace{Rate: &rate}, From: jobtype.Unfinished, Actor: "erin"})
	if !errors.Is(err, ledger.ErrJobStatus) {
		t.Fatalf("pace of a completed job: %v, want ErrJobStatus", err)
	}
	if _, err := store.JobsSetPace(ctx, ledger.PaceChange{JobID: "job-none", Pace: ledger.JobPace{Rate: &rate}, From: jobtype.Unfinished}); !errors.Is(err, ledger.ErrJobNotFound) {
		t.Fatalf("pace of no job: %v, want ErrJobNotFound", err)
	}
	if n := queryInt(t, store, `select count(*) from audit where job_id = 'job-p'`); n != 2 {
		t.Errorf("%d audit entries after the refusals, want 2", n)
	}
}
