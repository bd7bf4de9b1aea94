package executor

import (
	"testing"
	"time"

	"github.com/replayctl/replayctl/jobtype"
)

// The watch's own rate, when no executor reports one, and no ETA while the job is paused.
func TestWatchRateGivesAnETAExceptWhilePaused(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)
	report := func(status jobtype.Status, completed int64) *StatusReport {
		return &StatusReport{Status: status, Counts: Progress{Targets: 100, Completed: completed, Remaining: 100 - completed, State: string(status)}}
	}
	samples := watchRate(report(jobtype.Executing, 10), nil, at)
	r := report(jobtype.Executing, 30)
	samples = watchRate(r, samples, at.Add(2*time.Second))
	if r.Counts.Rate != 10 || r.Counts.ETA != 7*time.Second {
		t.Fatalf("20 settled in 2 s with 70 left: rate %.1f, ETA %s; want 10/s and 7s", r.Counts.Rate, r.Counts.ETA)
	}
	paused := report(jobtype.Paused, 40)
	watchRate(paused, samples, at.Add(3*time.Second))
	if paused.Counts.Rate <= 0 || paused.Counts.ETA != 0 {
		t.Fatalf("paused: rate %.1f, ETA %s; want the rate and no ETA", paused.Counts.Rate, paused.Counts.ETA)
	}
	attached := report(jobtype.Executing, 40)
	attached.Counts.Rate, attached.Counts.ETA = 55, time.Second
	watchRate(attached, samples, at.Add(3*time.Second))
	if attached.Counts.Rate != 55 || attached.Counts.ETA != time.Second {
		t.Fatalf("the executor's rate was replaced: %.1f, %s", attached.Counts.Rate, attached.Counts.ETA)
	}
}
