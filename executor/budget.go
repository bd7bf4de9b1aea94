package executor

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/replayctl/replayctl/ledger"
)

// The call budget is the passing shadow verdict's: the external calls the shadow measured, plus
// --max-calls-over, not the plan's assumption (issue 14: the plan assumed 300, the shadow
// measured 600 and passed, and execute then stopped at "over its budget of 330" with every call
// made). It is enforced before the calls: the publisher keeps no more targets in flight than
// the remaining budget covers at the calls one target makes.

// BudgetSource says which figure a call budget is based on.
type BudgetSource string

// Budget sources.
const (
	// BudgetFromVerdict: the shadow verdict's measured external calls.
	BudgetFromVerdict BudgetSource = "shadow_verdict"
	// BudgetFromPlan: the manifest's expectedExternalCalls, for a verdict recorded before
	// verdicts carried the shadow's calls.
	BudgetFromPlan BudgetSource = "plan"
)

// CallBudget is the external calls a run may start, and where the figure came from.
type CallBudget struct {
	// Source is BudgetFromVerdict or BudgetFromPlan; VerdictID the verdict's ID for the former.
	Source    BudgetSource `json:"source"`
	VerdictID int64        `json:"verdictId,omitempty"`
	// Calls is the figure the budget is based on; Budget is Calls × (1 + MaxCallsOver), rounded up.
	Calls        int64   `json:"calls"`
	MaxCallsOver float64 `json:"maxCallsOver"`
	Budget       int64   `json:"callBudget"`
	// PlanExpected is the manifest's expectedExternalCalls, shown beside a measured figure.
	PlanExpected int64 `json:"planExpected"`
	// PerTarget is the average calls of a target behind Calls, which the prorated guard holds
	// settled targets to; MaxPerTarget the most one target made, which the window reserves for
	// each target in flight.
	PerTarget    float64 `json:"perTarget"`
	MaxPerTarget int64   `json:"maxPerTarget"`
}

// Describe says in one phrase where the budget came from, for the table and the prompt.
func (b CallBudget) Describe() string {
	if b.Source == BudgetFromVerdict {
		return fmt.Sprintf("%d calls measured by shadow verdict #%d (the plan expected %d) + %s%% --max-calls-over", b.Calls, b.VerdictID, b.PlanExpected, formatPercent(b.MaxCallsOver))
	}
	return fmt.Sprintf("%d calls expected by the plan (the verdict recorded no measured calls) + %s%% --max-calls-over", b.Calls, formatPercent(b.MaxCallsOver))
}

func formatPercent(f float64) string { return fmt.Sprintf("%.4g", 100*f) }

// verdictCalls are the fields of a verdict's totals (the shadow package's JSON) the budget uses.
type verdictCalls struct {
	ShadowExternalCalls *int64 `json:"shadowExternalCalls"`
	Answered            int64  `json:"answered"`
	MaxCallsPerTarget   int64  `json:"maxCallsPerTarget"`
}

// budgetOf is the budget of a run of a job of targets, which the plan expected to make expected
// external calls, relying on verdict v.
func budgetOf(v ledger.ShadowVerdict, expected, targets int64, over float64) CallBudget {
	b := CallBudget{Source: BudgetFromPlan, Calls: expected, MaxCallsOver: over, PlanExpected: expected}
	if targets > 0 {
		b.PerTarget = float64(expected) / float64(targets)
	}
	var t verdictCalls
	if json.Unmarshal(v.Totals, &t) == nil && t.ShadowExternalCalls != nil {
		b.Source, b.VerdictID, b.Calls = BudgetFromVerdict, v.ID, *t.ShadowExternalCalls
		if t.Answered > 0 {
			b.PerTarget = float64(b.Calls) / float64(t.Answered)
		}
		b.MaxPerTarget = t.MaxCallsPerTarget
	}
	b.MaxPerTarget = max(b.MaxPerTarget, int64(math.Ceil(b.PerTarget)))
	b.Budget = callBudget(b.Calls, over)
	return b
}

// callBudget is calls plus the tolerance, rounded up.
func callBudget(calls int64, over float64) int64 {
	b := float64(calls) * (1 + over)
	n := int64(b)
	if float64(n) < b {
		n++
	}
	return n
}

func (s *session) callBudget() int64 { return s.budget.Budget }

// budgetWindow is what the publisher needs to know to stay inside the budget; runState.mu
// guards it, the watcher fills the call counts from each poll.
type budgetWindow struct {
	budget       int64
	maxPerTarget int64
	// settledCalls are the calls of settled targets, inFlightCalls those started by targets
	// without an outcome, as of the last poll.
	settledCalls, inFlightCalls int64
	// settled is how many targets have an outcome, for the calls they really made each.
	settled int64
	// exhausted says the last check held the publisher back.
	exhausted bool
}

// perTarget is what one target in flight is reserved: the most the shadow saw one target make,
// or more when the settled targets made more each.
func (b *budgetWindow) perTarget() float64 {
	per := float64(b.maxPerTarget)
	if b.settled > 0 {
		per = max(per, float64(b.settledCalls)/float64(b.settled))
	}
	return per
}

// holds says why one more publish would risk the budget, with inFlight targets without an
// outcome: their calls are counted at what was started or what they are reserved, whichever is
// more, and the next target is reserved its share. A budget of targets that make no call holds
// nothing: their calls cannot exceed it, and the guards stop a run whose targets start making some.
func (b *budgetWindow) holds(inFlight int64) string {
	per := b.perTarget()
	if per == 0 {
		b.exhausted = false
		return ""
	}
	committed := float64(b.settledCalls) + max(float64(b.inFlightCalls), float64(inFlight)*per)
	b.exhausted = committed+per > float64(b.budget)+1e-9
	if !b.exhausted {
		return ""
	}
	return fmt.Sprintf("budget: %d external calls made or reserved for the %d targets in flight, of a budget of %d; the next target (%.3g calls) waits for them to settle",
		int64(math.Ceil(committed)), inFlight, b.budget, per)
}
