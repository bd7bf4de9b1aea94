package executor

import (
	"fmt"

	"github.com/replayctl/replayctl/ledger"
)

// minGuardSample is how many settled targets the prorated guards wait for, so that the first
// failure of a large job is not a 100% error rate.
const minGuardSample = 20

// guardFinding is a guard's threshold passed: what was found, and what to do while the job can
// still be resumed.
type guardFinding struct {
	kind, found, advice string
}

// guardStop returns the guard that stops the run, or nil: exhausted says the budget holds the
// next target back with none in flight. At the end of a run (finished) and when the canary
// settled (canaryOver) every settled target counts however few; the uncertain guard, which exists to stop publishing, is
// left to the end's exit code then. A guard passed when no target remains stops nothing: the job
// completes, and the stop says so instead of offering a resume the job cannot take.
func (s *session) guardStop(p Progress, e ledger.JobEffectCounts, finished, canaryOver, exhausted bool) *Stop {
	f := s.guardFinding(p, e, finished, canaryOver, exhausted)
	if f == nil {
		return nil
	}
	if p.Remaining == 0 {
		return &Stop{Kind: f.kind, Completed: true, Message: fmt.Sprintf(
			"job %s completed, but the guard's threshold was passed: %s; every target settled, so there is nothing to resume: "+
				"review the failed and uncertain targets (listed, and in `replayctl status %s`)", s.m.ID, f.found, s.m.ID)}
	}
	return &Stop{Kind: f.kind, Message: f.found + "; " + f.advice}
}

func (s *session) guardFinding(p Progress, e ledger.JobEffectCounts, finished, canaryOver, exhausted bool) *guardFinding {
	g, m, b := s.opts.Guards, s.m, s.budget
	if p.ExternalCalls > b.Budget {
		return &guardFinding{kind: StopCallBudget, found: fmt.Sprintf(
			"the replay started %d external calls, over its budget of %d (%s)",
			p.ExternalCalls, b.Budget, b.Describe()),
			advice: "it is paused: review the consumer, then resume"}
	}
	if exhausted {
		return &guardFinding{kind: StopCallBudget, found: fmt.Sprintf(
			"the budget of %d external calls (%s) does not cover another target: %d calls made, %d targets not published",
			b.Budget, b.Describe(), p.ExternalCalls, p.Remaining),
			advice: "it is paused: review the consumer and the shadow's figures; to allow more calls, run execute again with a higher --max-calls-over after resume"}
	}
	settled := e.Settled() + p.SourceFailed
	if settled >= minGuardSample || ((finished || canaryOver) && settled > 0) {
		if e.Settled() > 0 && m.Stats.Targets > 0 {
			allowed := b.PerTarget * float64(e.Settled()) * (1 + g.MaxCallsOver)
			if float64(e.SettledCalls) > allowed {
				return &guardFinding{kind: StopCallBudget, found: fmt.Sprintf(
					"the %d settled targets made %d external calls, %.2f each; the budget allows %.2f each (%s), %d for the job at this rate against a budget of %d",
					e.Settled(), e.SettledCalls, float64(e.SettledCalls)/float64(e.Settled()), b.PerTarget*(1+g.MaxCallsOver), b.Describe(),
					int64(float64(e.SettledCalls)/float64(e.Settled())*float64(m.Stats.Targets)), b.Budget),
					advice: "it is paused: review the consumer, then resume"}
			}
		}
		if ratio := float64(p.Failed) / float64(settled); ratio > g.MaxErrorRatio {
			return &guardFinding{kind: StopErrorRate, found: fmt.Sprintf(
				"%d of %d settled targets failed (%.1f%%), above --max-error-ratio %.1f%%",
				p.Failed, settled, 100*ratio, 100*g.MaxErrorRatio),
				advice: "see the failed list, fix the cause, then resume"}
		}
	}
	if !finished && p.Remaining > 0 && p.Uncertain > g.MaxUncertain {
		return &guardFinding{kind: StopUncertain, found: fmt.Sprintf(
			"%d targets are uncertain (an external call may or may not have happened), above --max-uncertain %d",
			p.Uncertain, g.MaxUncertain),
			advice: "review them by hand, then resume"}
	}
	return nil
}
