package job_test

import (
	"testing"

	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger"
)

// Acknowledged publishes are recorded in batches, and the consumer often writes an outcome first:
// mid-run, status showed 53 published beside 61 completed. A target with a ledger row under the
// job was published, so published is never below the rows.
func TestPublishedIsNeverBelowTheTargetsWithALedgerRow(t *testing.T) {
	t.Parallel()
	ts := map[string]int64{ledger.TargetPublished: 53, ledger.TargetPending: 45, ledger.TargetFailed: 2}
	e := ledger.JobEffectCounts{Completed: 61, BusinessFailed: 1, Uncertain: 1, Processing: 3, Retrying: 1}
	p := job.ProgressOf(100, ts, e, false)
	if rows := e.Settled() + e.Processing + e.Retrying; p.Published < rows {
		t.Errorf("published %d below the %d targets with a ledger row (completed %d)", p.Published, rows, p.Completed)
	}
	if p.Published > 100-ts[ledger.TargetFailed] {
		t.Errorf("published %d is more than the targets that could be published", p.Published)
	}
	// When the marks are ahead (published, no outcome yet), they are the figure.
	ts[ledger.TargetPublished] = 90
	if p := job.ProgressOf(100, ts, e, false); p.Published != 90 {
		t.Errorf("published %d, want the 90 recorded", p.Published)
	}
}

// Targets the consumer dead-lettered again were published and delivered: they are failed, never
// "failed at the source", before and after the job settles (issue 39 item 8: execute printed
// "published (all runs) 0" and "not published: 10" for ten messages delivered five times each).
func TestTargetsDeadLetteredAgainArePublishedFailuresNotSourceFailures(t *testing.T) {
	t.Parallel()
	e := ledger.JobEffectCounts{DeadLettered: 10}
	for _, settled := range []bool{false, true} {
		ts := map[string]int64{ledger.TargetFailed: 10}
		p := job.ProgressOf(10, ts, e, settled)
		if p.Published != 10 || p.Failed != 10 || p.SourceFailed != 0 || p.Remaining != 0 {
			t.Errorf("settled %t: published %d, failed %d, source failed %d, remaining %d; want 10, 10, 0, 0",
				settled, p.Published, p.Failed, p.SourceFailed, p.Remaining)
		}
	}
	// One source failure beside them stays one.
	ts := map[string]int64{ledger.TargetFailed: 11}
	if p := job.ProgressOf(11, ts, e, true); p.SourceFailed != 1 || p.Published != 10 {
		t.Errorf("with a source failure: source failed %d, published %d; want 1 and 10", p.SourceFailed, p.Published)
	}
}
