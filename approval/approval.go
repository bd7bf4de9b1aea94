// Package approval decides whether a replay job has the approvals its consumer's policy asks for
// before execute may run it. An approval is bound to the job's manifest digest and to the shadow
// verdict it was given after: a re-plan (another digest) or a new verdict voids it, and so does
// time. It imports nothing of the project's adapters: the ledger stores its records and the
// executor asks Judge.
package approval

import (
	"fmt"
	"time"
)

// DefaultValidFor is how long an approval counts when the policy does not say.
const DefaultValidFor = 24 * time.Hour

// Policy is a consumer's approval policy (replayctl policy set).
type Policy struct {
	Consumer string `json:"consumer"`
	// Approvals is how many actors other than the planner must approve a job.
	Approvals int `json:"approvals"`
	// UnlessWriteForbidden waives the approvals for a write-forbidden job (no external write).
	UnlessWriteForbidden bool `json:"unlessWriteForbidden"`
	// WhenCallsOver, when set, asks for approvals only when the job expects more external calls.
	WhenCallsOver *int64 `json:"whenCallsOver"`
	// ValidFor is how long an approval counts after it was given.
	ValidForSeconds float64   `json:"validForSeconds"`
	SetBy           string    `json:"setBy"`
	SetAt           time.Time `json:"setAt"`
}

// ValidFor is the policy's approval lifetime.
func (p *Policy) ValidFor() time.Duration {
	if p.ValidForSeconds <= 0 {
		return DefaultValidFor
	}
	return time.Duration(p.ValidForSeconds * float64(time.Second))
}

// Decision is what an actor said of a job.
type Decision string

// Decisions.
const (
	Approved Decision = "approved"
	Rejected Decision = "rejected"
)

// Record is one approval or rejection as the ledger keeps it.
type Record struct {
	ID             int64     `json:"id"`
	JobID          string    `json:"jobId"`
	ManifestDigest string    `json:"manifestDigest"`
	VerdictID      int64     `json:"verdictId"`
	Actor          string    `json:"actor"`
	Decision       Decision  `json:"decision"`
	Note           string    `json:"note"`
	At             time.Time `json:"at"`
	ExpiresAt      time.Time `json:"expiresAt"`
}

// Job is what Judge needs of a job.
type Job struct {
	ID, ManifestDigest string
	// Planner is who planned it: never an approver of it.
	Planner string
	// VerdictID is its latest passing shadow verdict (0: none).
	VerdictID      int64
	WriteForbidden bool
	// ExpectedCalls is what a calls threshold is judged on: execute passes the larger of the
	// plan's estimate and the budget it will enforce (shadow's measure with --max-calls-over);
	// elsewhere it is the plan's estimate.
	ExpectedCalls int64
}

// State is where a job stands against its consumer's policy.
type State struct {
	// Required is how many approvals the policy asks of this job; Why says why (or why none).
	Required int    `json:"required"`
	Why      string `json:"why"`
	// Approvals are the approvals that count; Rejections the rejections that stand.
	Approvals  []Record `json:"approvals"`
	Rejections []Record `json:"rejections"`
	// Voided counts decisions that no longer count: for another digest or verdict, or expired.
	Voided int `json:"voided"`
	// Satisfied says execute may run the job.
	Satisfied bool `json:"satisfied"`
}

// Required is how many approvals p asks of j, and why.
func Required(p *Policy, j Job) (int, string) {
	switch {
	case p == nil || p.Approvals == 0:
		return 0, "the consumer has no approval policy"
	case p.UnlessWriteForbidden && j.WriteForbidden:
		return 0, "the job is write-forbidden, and the policy waives approvals for it"
	case p.WhenCallsOver != nil && j.ExpectedCalls <= *p.WhenCallsOver:
		return 0, fmt.Sprintf("the job may make %d external calls, not over the policy's %d", j.ExpectedCalls, *p.WhenCallsOver)
	}
	why := fmt.Sprintf("the policy of consumer %s asks for %d", p.Consumer, p.Approvals)
	if p.WhenCallsOver != nil {
		why += fmt.Sprintf(" when a job may make over %d external calls (this one %d)", *p.WhenCallsOver, j.ExpectedCalls)
	}
	return p.Approvals, why
}

// Judge says whether j has what p asks, counting from recs (j's decisions, oldest first) each
// actor's latest decision on j's digest, the planner's aside. An approval counts only for j's
// current verdict and until it expires; a rejection stands until its author approves after it,
// whatever verdict came since: shadowing again voids approvals, never rejections.
func Judge(p *Policy, j Job, recs []Record, now time.Time) State {
	st := State{Approvals: []Record{}, Rejections: []Record{}}
	st.Required, st.Why = Required(p, j)
	latest := map[string]Record{}
	var order []string
	for _, r := range recs {
		if r.ManifestDigest != j.ManifestDigest || r.Actor == j.Planner {
			st.Voided++
			continue
		}
		if _, seen := latest[r.Actor]; !seen {
			order = append(order, r.Actor)
		} else {
			st.Voided++
		}
		latest[r.Actor] = r
	}
	for _, actor := range order {
		r := latest[actor]
		switch {
		case r.Decision == Rejected:
			st.Rejections = append(st.Rejections, r)
		case r.VerdictID != j.VerdictID || !now.Before(r.ExpiresAt):
			st.Voided++
		default:
			st.Approvals = append(st.Approvals, r)
		}
	}
	st.Satisfied = len(st.Rejections) == 0 && len(st.Approvals) >= st.Required
	return st
}
