package executor

import (
	"strings"
	"testing"

	"github.com/replayctl/replayctl/ledger"
)

// Each guard judged on figures alone: the threshold itself passes, one more stops, and the
// sample and end-of-run rules decide when the prorated guards may speak.
func TestGuardsStopJustAboveTheirThresholds(t *testing.T) {
	t.Parallel()
	budget := CallBudget{Source: BudgetFromPlan, Calls: 100, MaxCallsOver: 0.1, Budget: 110, PlanExpected: 100, PerTarget: 1}
	base := func() guardInput {
		return guardInput{Guards: Guards{MaxCallsOver: 0.1, MaxErrorRatio: 0.05, MaxUncertain: 2, MaxRetryingRatio: 0.8}, Budget: budget,
			PlannedTargets: 100, Progress: Progress{Targets: 100, Remaining: 50}}
	}
	inFlight := func(in *guardInput, published, processing, retrying int64) {
		in.Published, in.Effects.Processing, in.Effects.Retrying, in.RetryingThisRun = published, processing, retrying, retrying
	}
	settled := func(in *guardInput, completed, failed, calls int64) {
		in.Effects = ledger.JobEffectCounts{Completed: completed, BusinessFailed: failed, SettledCalls: calls}
		in.Failed = failed
	}
	for _, c := range []struct {
		name  string
		edit  func(*guardInput)
		kind  StopKind // "" when no guard stops the run
		found string   // part of the finding
	}{
		{"nothing settled yet", func(*guardInput) {}, "", ""},
		{"calls at the budget", func(in *guardInput) { in.ExternalCalls = 110 }, "", ""},
		{"calls over the budget", func(in *guardInput) { in.ExternalCalls = 111 }, StopCallBudget,
			"the replay started 111 external calls, over its budget of 110 (100 calls expected by the plan"},
		{"budget exhausted", func(in *guardInput) { in.Exhausted, in.ExternalCalls = true, 109 }, StopCallBudget,
			"the budget of 110 external calls (100 calls expected by the plan (the verdict recorded no measured calls) + 10% --max-calls-over) does not cover another target: 109 calls made, 50 targets not published"},
		{"settled targets at the prorated allowance", func(in *guardInput) { settled(in, 20, 0, 22) }, "", ""},
		{"settled targets over the prorated allowance", func(in *guardInput) { settled(in, 20, 0, 23) }, StopCallBudget,
			"the 20 settled targets made 23 external calls, 1.15 each; the budget allows 1.10 each"},
		{"prorated guard waits for its sample", func(in *guardInput) { settled(in, 19, 0, 40) }, "", ""},
		{"prorated guard judges the few at the end", func(in *guardInput) { settled(in, 5, 0, 10); in.Finished = true }, StopCallBudget,
			"the 5 settled targets made 10 external calls"},
		{"prorated guard judges the few when the canary settled", func(in *guardInput) { settled(in, 5, 0, 10); in.CanaryOver = true }, StopCallBudget,
			"the 5 settled targets made 10 external calls"},
		{"without planned targets the prorated guard is off", func(in *guardInput) { settled(in, 20, 0, 40); in.PlannedTargets = 0 }, "", ""},
		{"failures at --max-error-ratio", func(in *guardInput) { settled(in, 38, 2, 40) }, "", ""},
		{"failures above --max-error-ratio", func(in *guardInput) { settled(in, 37, 3, 40) }, StopErrorRate,
			"3 of 40 settled targets failed (7.5%), above --max-error-ratio 5.0%"},
		{"a DLQ message gone is a settled failure", func(in *guardInput) { settled(in, 37, 0, 37); in.SourceFailed, in.Failed = 3, 3 }, StopErrorRate,
			"3 of 40 settled targets failed (7.5%)"},
		{"error rate waits for its sample", func(in *guardInput) { settled(in, 10, 5, 15) }, "", ""},
		{"uncertain at --max-uncertain", func(in *guardInput) { in.Uncertain = 2 }, "", ""},
		{"uncertain above --max-uncertain", func(in *guardInput) { in.Uncertain = 3 }, StopUncertain,
			"3 targets are uncertain (an external call may or may not have happened), above --max-uncertain 2"},
		{"uncertain left to the exit code at the end", func(in *guardInput) { in.Uncertain, in.Finished = 3, true }, "", ""},
		{"uncertain with nothing left to publish", func(in *guardInput) { in.Uncertain, in.Remaining = 3, 0 }, "", ""},
		{"retrying at --max-retrying-ratio", func(in *guardInput) { inFlight(in, 50, 10, 40) }, "", ""},
		{"retrying above --max-retrying-ratio", func(in *guardInput) { inFlight(in, 50, 9, 41) }, StopRetrying,
			"41 of 50 published targets without an outcome are waiting to retry after a transient failure (82%), above --max-retrying-ratio 80%"},
		{"retrying waits for 10 of them", func(in *guardInput) { inFlight(in, 9, 0, 9) }, "", ""},
		{"a canary whose every target retries", func(in *guardInput) { inFlight(in, 10, 0, 10) }, StopRetrying, "10 of 10 published targets"},
		{"retrying judged against the published targets without an outcome", func(in *guardInput) {
			settled(in, 30, 0, 30)
			inFlight(in, 130, 59, 41)
		}, "", ""},
		{"retrying among few in flight after many settled", func(in *guardInput) {
			settled(in, 30, 0, 30)
			inFlight(in, 80, 9, 41)
		}, StopRetrying, "41 of 50 published targets"},
		{"a target dead-lettered again is not waiting", func(in *guardInput) {
			inFlight(in, 60, 9, 41)
			in.Effects.DeadLettered = 10
		}, StopRetrying, "41 of 50 published targets"},
		{"targets still waiting out a backoff from before the run", func(in *guardInput) {
			inFlight(in, 50, 0, 50)
			in.RetryingThisRun = 40
		}, "", ""},
		{"releases read after the counts are held to them", func(in *guardInput) {
			inFlight(in, 50, 9, 41)
			in.RetryingThisRun = 60
		}, StopRetrying, "41 of 50 published targets"},
		{"retrying with nothing left to publish", func(in *guardInput) { inFlight(in, 50, 0, 50); in.Remaining = 0 }, "", ""},
		{"retrying left alone at the end", func(in *guardInput) { inFlight(in, 50, 0, 50); in.Finished = true }, "", ""},
		{"the budget is judged before the error rate", func(in *guardInput) { settled(in, 30, 10, 40); in.ExternalCalls = 111 }, StopCallBudget,
			"over its budget of 110"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := base()
			c.edit(&in)
			f := judgeGuards(in)
			switch {
			case c.kind == "" && f != nil:
				t.Fatalf("stopped by %s: %s", f.kind, f.found)
			case c.kind == "":
			case f == nil:
				t.Fatalf("no guard stopped the run, want %s", c.kind)
			case f.kind != c.kind || !strings.Contains(f.found, c.found) || f.advice == "":
				t.Fatalf("finding %+v\nwant kind %s, found containing %q, and advice", *f, c.kind, c.found)
			}
		})
	}
}

func TestAGuardPassedWithNothingLeftCompletesTheJob(t *testing.T) {
	t.Parallel()
	f := &guardFinding{kind: StopErrorRate, found: "3 of 40 settled targets failed", advice: "see the failed list, fix the cause, then resume"}
	if s := guardStop("job-1", 4, f); s.Completed || s.Message != "3 of 40 settled targets failed; see the failed list, fix the cause, then resume" {
		t.Errorf("with targets left: %+v", s)
	}
	s := guardStop("job-1", 0, f)
	if !s.Completed || s.Kind != StopErrorRate || !strings.Contains(s.Message, "job job-1 completed, but the guard's threshold was passed: 3 of 40") ||
		!strings.Contains(s.Message, "`replayctl status job-1`") {
		t.Errorf("with none left: %+v", s)
	}
	if guardStop("job-1", 0, nil) != nil {
		t.Error("no finding made a stop")
	}
}
