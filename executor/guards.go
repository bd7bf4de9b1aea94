package executor

import (
	"fmt"

	"github.com/replayctl/replayctl/ledger"
)

// minGuardSample is how many settled targets the prorated guards wait for, so that the first
// failure of a large job is not a 100% error rate.
const minGuardSample = 20

func (s *session) callBudget() int64 {
	return callBudget(s.m.ExpectedExternalCalls, s.opts.Guards.MaxCallsOver)
}

// guardStop returns the guard that stops the run, or nil. At the end of a run (finished) every
// settled target counts however few; the uncertain guard, which exists to stop publishing, is
// left to the end's exit code then.
func (s *session) guardStop(p Progress, e ledger.JobEffectCounts, finished bool) *Stop {
	g, m := s.opts.Guards, s.m
	if budget := s.callBudget(); p.ExternalCalls > budget {
		return &Stop{Kind: StopCallBudget, Message: fmt.Sprintf(
			"the replay started %d external calls, over its budget of %d (expected %d + %.0f%%, --max-calls-over); it is paused: review the consumer, then resume",
			p.ExternalCalls, budget, m.ExpectedExternalCalls, 100*g.MaxCallsOver)}
	}
	settled := e.Settled() + p.SourceFailed
	if settled >= minGuardSample || (finished && settled > 0) {
		if e.Settled() > 0 && m.Stats.Targets > 0 {
			perTarget := float64(m.ExpectedExternalCalls) / float64(m.Stats.Targets)
			allowed := perTarget * float64(e.Settled()) * (1 + g.MaxCallsOver)
			if float64(e.SettledCalls) > allowed {
				return &Stop{Kind: StopCallBudget, Message: fmt.Sprintf(
					"the %d settled targets made %d external calls, %.2f each; the plan expects %.2f each (+%.0f%%, --max-calls-over), %d for the job at this rate against %d expected",
					e.Settled(), e.SettledCalls, float64(e.SettledCalls)/float64(e.Settled()), perTarget, 100*g.MaxCallsOver,
					int64(float64(e.SettledCalls)/float64(e.Settled())*float64(m.Stats.Targets)), m.ExpectedExternalCalls)}
			}
		}
		if ratio := float64(p.Failed) / float64(settled); ratio > g.MaxErrorRatio {
			return &Stop{Kind: StopErrorRate, Message: fmt.Sprintf(
				"%d of %d settled targets failed (%.1f%%), above --max-error-ratio %.1f%%; see the failed list, fix the cause, then resume",
				p.Failed, settled, 100*ratio, 100*g.MaxErrorRatio)}
		}
	}
	if !finished && p.Uncertain > g.MaxUncertain {
		return &Stop{Kind: StopUncertain, Message: fmt.Sprintf(
			"%d targets are uncertain (an external call may or may not have happened), above --max-uncertain %d; review them by hand, then resume",
			p.Uncertain, g.MaxUncertain)}
	}
	return nil
}
