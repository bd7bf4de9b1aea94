package executor_test

import (
	"errors"
	"maps"
	"testing"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/manifest"
)

// cancelPartway executes m at a slow rate, cancels it once at least five more targets of it
// completed, waits until the consumer handled everything published, and returns how many
// targets the job completed.
func cancelPartway(t *testing.T, e *exectest.Env, m *manifest.Manifest) int64 {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := execute(e, options(m, func(o *executor.Options) { o.Rate = 40 }))
		done <- err
	}()
	waitFor(t, "the first targets of "+m.ID+" to complete", func() bool { return e.EffectCounts(m).Completed >= 5 })
	if _, err := job.Cancel(e.Ctx, e.Store, job.Control{JobID: m.ID, Actor: "erin", Reason: "wrong rate"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := errors.AsType[*executor.StopError](<-done); !ok {
		t.Fatalf("execute of %s did not stop on the cancel", m.ID)
	}
	e.WaitIdle()
	completed := e.EffectCounts(m).Completed
	if completed >= m.Stats.Targets {
		t.Fatalf("job %s completed all %d targets before the cancel", m.ID, completed)
	}
	return completed
}

// TestReplanningNeverChargesAnEventTwice is issue 14's second finding: a job cancelled partway,
// planned again with the same filter, targeted everything again, and an order completed by
// three jobs was charged three times; an event that completed live before it was dead-lettered
// was targeted too. Now each plan targets only what no version completed, and across three jobs
// every order is charged exactly once.
func TestReplanningNeverChargesAnEventTwice(t *testing.T) {
	t.Parallel()
	const n = 60
	e := exectest.New(t, exectest.Options{})
	e.Seed(n)
	e.RunConsumer(e.NewConsumer(nil, nil))
	// The first order completed live after all, once its copy was already in the DLQ.
	e.PublishLive(exectest.EventID(0), exectest.Order(0))
	e.WaitIdle()

	first := e.PlanWith("job-replan-1", nil)
	if first.Stats.Targets != n-1 || first.Stats.AlreadyCompleted != 1 ||
		!maps.Equal(first.Stats.AlreadyCompletedBy, map[string]int64{manifest.CompletedLive: 1}) {
		t.Fatalf("first plan: %d targets, already completed %d by %v; want %d and the live one",
			first.Stats.Targets, first.Stats.AlreadyCompleted, first.Stats.AlreadyCompletedBy, n-1)
	}
	if want := (manifest.CompletedExclusion{EventID: exectest.EventID(0), EffectVersion: 1}); len(first.Excluded.AlreadyCompleted) != 1 || first.Excluded.AlreadyCompleted[0] != want {
		t.Fatalf("first plan lists %+v as already completed, want %+v", first.Excluded.AlreadyCompleted, want)
	}
	e.Shadow(first)
	byFirst := cancelPartway(t, e, first)

	second := e.PlanWith("job-replan-2", nil)
	wantBy := map[string]int64{manifest.CompletedLive: 1, first.ID: byFirst}
	if second.Stats.Targets != n-1-byFirst || !maps.Equal(second.Stats.AlreadyCompletedBy, wantBy) || second.Stats.CompletedUnderOlderVersion != 0 {
		t.Fatalf("second plan: %d targets, already completed by %v, completed under an older version %d; want %d, %v, 0",
			second.Stats.Targets, second.Stats.AlreadyCompletedBy, second.Stats.CompletedUnderOlderVersion, n-1-byFirst, wantBy)
	}
	e.Shadow(second)
	bySecond := cancelPartway(t, e, second)

	third := e.PlanWith("job-replan-3", nil)
	wantBy[second.ID] = bySecond
	if third.Stats.Targets != n-1-byFirst-bySecond || !maps.Equal(third.Stats.AlreadyCompletedBy, wantBy) {
		t.Fatalf("third plan: %d targets, already completed by %v; want %d, %v",
			third.Stats.Targets, third.Stats.AlreadyCompletedBy, n-1-byFirst-bySecond, wantBy)
	}
	e.Shadow(third)
	r := mustExecute(t, e, options(third, nil))
	if r.Final.Completed != third.Stats.Targets || r.JobStatus != "completed" {
		t.Fatalf("third job: %+v, status %s", r.Final, r.JobStatus)
	}
	e.WaitIdle()
	for i := range n {
		if c := e.Provider.Charges(exectest.Order(i).OrderID); c != 1 {
			t.Errorf("%s charged %d times across the live delivery and three jobs, want once", exectest.Order(i).OrderID, c)
		}
	}
}
