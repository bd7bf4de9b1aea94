package executor

import (
	"fmt"

	"github.com/replayctl/replayctl/ledger"
)

// minGuardSample is how many settled targets the prorated guards wait for, so that the first
// failure of a large job is not a 100% error rate.
const minGuardSample = 20

// minRetryingSample is how many targets must be retrying before downstreamFailing judges: the
// smallest canary (10 targets), so a canary whose every target retries stops, where the sample of
// the prorated guards would wait for targets the canary never publishes.
const minRetryingSample = 10

// guardFinding is a guard's threshold passed: what was found, and what to do while the job can
// still be resumed.
type guardFinding struct {
	kind          StopKind
	found, advice string
}

// guardInput is all a guard judges at one poll: figures, no connection, so each guard is tested
// with a table (guards_internal_test.go) and a new one needs no PostgreSQL to test.
type guardInput struct {
	Guards         Guards
	Budget         CallBudget
	PlannedTargets int64 // the manifest's stats.targets
	Progress
	Effects ledger.JobEffectCounts
	// RetryingThisRun counts Effects.Retrying's rows whose last transient failure came during
	// this run (read only when Effects.Retrying could pass the guard's sample).
	RetryingThisRun int64
	// Finished: nothing is publishing and no target remains. CanaryOver: the canary settled.
	// Exhausted: the budget holds the next target back with none in flight.
	Finished, CanaryOver, Exhausted bool
}

// settled counts the targets with an outcome, and those whose DLQ message failed them.
func (in guardInput) settled() int64 { return in.Effects.Settled() + in.SourceFailed }

// sampled says the prorated guards may judge: enough settled targets, or, at the end of a run
// and when the canary settled, every settled target however few.
func (in guardInput) sampled() bool {
	n := in.settled()
	return n >= minGuardSample || ((in.Finished || in.CanaryOver) && n > 0)
}

// A guard returns its finding when its threshold is passed, nil otherwise.
type guard func(guardInput) *guardFinding

// guards are judged in this order; the first finding stops the run. A new guard is a function
// here, its flag in Guards, and rows in guards_internal_test.go.
var guards = []guard{callsOverBudget, budgetExhausted, callsOverProrated, errorRate, tooManyUncertain, downstreamFailing}

// judgeGuards returns the first guard's finding, or nil.
func judgeGuards(in guardInput) *guardFinding {
	for _, g := range guards {
		if f := g(in); f != nil {
			return f
		}
	}
	return nil
}

// guardStop is the stop a finding makes of job jobID's run. A guard passed when no target remains
// stops nothing: the job completes, and the stop says so instead of offering a resume the job
// cannot take.
func guardStop(jobID string, remaining int64, f *guardFinding) *Stop {
	if f == nil {
		return nil
	}
	if remaining == 0 {
		return &Stop{Kind: f.kind, Completed: true, Message: fmt.Sprintf(
			"job %s completed, but the guard's threshold was passed: %s; every target settled, so there is nothing to resume: "+
				"review the failed and uncertain targets (listed, and in `replayctl status %s`)", jobID, f.found, jobID)}
	}
	return &Stop{Kind: f.kind, Message: f.found + "; " + f.advice}
}

// callsOverBudget: the calls started passed the job's budget.
func callsOverBudget(in guardInput) *guardFinding {
	b := in.Budget
	if in.ExternalCalls <= b.Budget {
		return nil
	}
	return &guardFinding{kind: StopCallBudget, found: fmt.Sprintf(
		"the replay started %d external calls, over its budget of %d (%s)",
		in.ExternalCalls, b.Budget, b.Describe()),
		advice: "it is paused: review the consumer, then resume"}
}

// budgetExhausted: what is left of the budget does not cover another target.
func budgetExhausted(in guardInput) *guardFinding {
	if !in.Exhausted {
		return nil
	}
	b := in.Budget
	return &guardFinding{kind: StopCallBudget, found: fmt.Sprintf(
		"the budget of %d external calls (%s) does not cover another target: %d calls made, %d targets not published",
		b.Budget, b.Describe(), in.ExternalCalls, in.Remaining),
		advice: "it is paused: review the consumer and the shadow's figures; to allow more calls, run execute again with a higher --max-calls-over after resume"}
}

// callsOverProrated: the settled targets made more calls each than the budget allows a target.
func callsOverProrated(in guardInput) *guardFinding {
	e, b, over := in.Effects, in.Budget, in.Guards.MaxCallsOver
	if !in.sampled() || e.Settled() == 0 || in.PlannedTargets == 0 {
		return nil
	}
	if allowed := b.PerTarget * float64(e.Settled()) * (1 + over); float64(e.SettledCalls) <= allowed {
		return nil
	}
	each := float64(e.SettledCalls) / float64(e.Settled())
	return &guardFinding{kind: StopCallBudget, found: fmt.Sprintf(
		"the %d settled targets made %d external calls, %.2f each; the budget allows %.2f each (%s), %d for the job at this rate against a budget of %d",
		e.Settled(), e.SettledCalls, each, b.PerTarget*(1+over), b.Describe(), int64(each*float64(in.PlannedTargets)), b.Budget),
		advice: "it is paused: review the consumer, then resume"}
}

// errorRate: too many settled targets failed (--max-error-ratio).
func errorRate(in guardInput) *guardFinding {
	if !in.sampled() {
		return nil
	}
	settled, limit := in.settled(), in.Guards.MaxErrorRatio
	ratio := float64(in.Failed) / float64(settled)
	if ratio <= limit {
		return nil
	}
	return &guardFinding{kind: StopErrorRate, found: fmt.Sprintf(
		"%d of %d settled targets failed (%.1f%%), above --max-error-ratio %.1f%%",
		in.Failed, settled, 100*ratio, 100*limit),
		advice: "see the failed list, fix the cause, then resume"}
}

// tooManyUncertain stops publishing past --max-uncertain; at the end of a run it is left to the
// end's exit code, as it exists to stop publishing.
func tooManyUncertain(in guardInput) *guardFinding {
	if in.Finished || in.Remaining == 0 || in.Uncertain <= in.Guards.MaxUncertain {
		return nil
	}
	return &guardFinding{kind: StopUncertain, found: fmt.Sprintf(
		"%d targets are uncertain (an external call may or may not have happened), above --max-uncertain %d",
		in.Uncertain, in.Guards.MaxUncertain),
		advice: "review them by hand, then resume"}
}

// downstreamFailing stops publishing when most published targets wait to retry after a transient
// failure (--max-retrying-ratio): the consumer's dependency is failing, and more targets would
// only queue behind it. Pausing loses nothing: the targets in flight keep retrying and settle on
// their own, and resume publishes the rest. Like tooManyUncertain it is silent once nothing is
// left to publish.
func downstreamFailing(in guardInput) *guardFinding {
	// Counted from the run's start: after a resume, targets still waiting out a backoff from the
	// outage that paused the job say nothing about the provider now; once one is delivered and
	// fails again it counts. Read a moment after Effects, it is held to Effects' count.
	retrying := min(in.RetryingThisRun, in.Effects.Retrying)
	if in.Finished || in.Remaining == 0 || retrying < minRetryingSample {
		return nil
	}
	// Published targets without an outcome (a target dead-lettered again has one: failed); the
	// ledger's rows of such targets when those are more, as the two are read a moment apart.
	e := in.Effects
	waiting := max(in.Published-e.Settled()-e.DeadLettered, e.Processing+e.Retrying)
	ratio := float64(retrying) / float64(waiting)
	if ratio <= in.Guards.MaxRetryingRatio {
		return nil
	}
	return &guardFinding{kind: StopRetrying, found: fmt.Sprintf(
		"%d of %d published targets without an outcome are waiting to retry after a transient failure (%.0f%%), above --max-retrying-ratio %.0f%%: "+
			"what the consumer calls is failing",
		retrying, waiting, 100*ratio, 100*in.Guards.MaxRetryingRatio),
		advice: "it is paused, and the targets in flight keep retrying on their own: check the consumer's logs and its dependency, then resume"}
}
