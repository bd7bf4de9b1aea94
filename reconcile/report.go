package reconcile

import (
	"encoding/json"
	"time"

	"github.com/replayctl/replayctl/protocol"
)

// Outcome is what a run did, or (dry run, not confirmed) would do, with one uncertain row.
type Outcome string

// Row outcomes.
const (
	// OutcomeReconciled: the look-up answered happened; the row is reconciled, never replayed.
	OutcomeReconciled Outcome = "reconciled"
	// OutcomeManualReview: the look-up answered not_happened or unknown; the row stays uncertain,
	// marked for manual review.
	OutcomeManualReview Outcome = "manual_review"
	// OutcomeWouldReconcile and OutcomeWouldReview are the same verdicts, not applied.
	OutcomeWouldReconcile Outcome = "would_reconcile"
	OutcomeWouldReview    Outcome = "would_review"
	// OutcomeUnanswered: no usable answer (timeout, a reply for another event); row untouched.
	OutcomeUnanswered Outcome = "unanswered"
	// OutcomeChanged: the row changed between list and apply (reconciled or marked by someone
	// else, or uncertain anew); it was left alone.
	OutcomeChanged Outcome = "changed_since_listed"
)

// Report is what one reconcile run found and did; cmd prints it as a table or as --json.
type Report struct {
	RunID     string `json:"runId"`
	Consumer  string `json:"consumer"`
	JobID     string `json:"jobId,omitempty"`
	OlderThan string `json:"olderThan,omitempty"`
	Subject   string `json:"subject"`
	DryRun    bool   `json:"dryRun"`
	// Applied says the verdicts were written to the ledger.
	Applied bool `json:"applied"`
	// Truncated says more uncertain rows match than Options.Max: run reconcile again for them.
	Truncated bool   `json:"truncated"`
	Rows      []Row  `json:"rows"`
	Totals    Totals `json:"totals"`
}

// Row is one uncertain ledger row, what the look-up said and what became of it. No payload.
type Row struct {
	EventID       string `json:"eventId"`
	EffectVersion int    `json:"effectVersion"`
	JobID         string `json:"jobId,omitempty"`
	// UncertainForSeconds is how long the row had been uncertain when listed (database clock); for
	// a stuck lease, how long since its last heartbeat or call.
	UncertainForSeconds float64 `json:"uncertainForSeconds"`
	// StuckLease says the row was not uncertain but processing under a lease that lapsed over
	// 15 minutes ago after a call started, with no message left to bring the SDK back to it. It
	// is settled like an uncertain row: reconciled, or uncertain for manual review.
	StuckLease bool `json:"stuckLease,omitempty"`
	// Calls is the external calls the row started or made.
	Calls int `json:"calls"`
	// ExternalRefs are the calls the row recorded before this run.
	ExternalRefs json.RawMessage `json:"externalRefs"`
	LastError    string          `json:"lastError,omitempty"`
	// PreviousVerdict is an earlier reconcile's verdict on the row, if any.
	PreviousVerdict string `json:"previousVerdict,omitempty"`
	// Verdict is the look-up's: happened, not_happened or unknown; empty when unanswered.
	Verdict   string            `json:"verdict,omitempty"`
	Detail    string            `json:"detail,omitempty"`
	FoundRefs []protocol.Effect `json:"foundRefs,omitempty"`
	Outcome   Outcome           `json:"outcome"`
	// Error says why the row was unanswered.
	Error string `json:"error,omitempty"`

	seenUpdatedAt  time.Time
	seenReviewedAt *time.Time
}

// Totals count the rows by verdict and by outcome.
type Totals struct {
	Listed       int `json:"listed"`
	Happened     int `json:"happened"`
	NotHappened  int `json:"notHappened"`
	Unknown      int `json:"unknown"`
	Unanswered   int `json:"unanswered"`
	Reconciled   int `json:"reconciled"`
	ManualReview int `json:"manualReview"`
	Changed      int `json:"changedSinceListed"`
	// Remaining is the listed rows this run did not reconcile (or, dry run, would not): they stay
	// uncertain and need a person.
	Remaining int `json:"remaining"`
}

// NeedsReview reports whether uncertain rows remain after the run (exit code 5): rows not
// reconciled, or rows beyond Options.Max not even asked about.
func (r *Report) NeedsReview() bool { return r.Totals.Remaining > 0 || r.Truncated }

// total recounts Totals from the rows.
func (r *Report) total() {
	t := Totals{Listed: len(r.Rows)}
	for _, row := range r.Rows {
		switch row.Verdict {
		case protocol.VerdictHappened:
			t.Happened++
		case protocol.VerdictNotHappened:
			t.NotHappened++
		case protocol.VerdictUnknown:
			t.Unknown++
		}
		switch row.Outcome {
		case OutcomeUnanswered:
			t.Unanswered++
		case OutcomeReconciled:
			t.Reconciled++
		case OutcomeManualReview:
			t.ManualReview++
		case OutcomeChanged:
			t.Changed++
		}
		if row.Outcome != OutcomeReconciled && !(r.DryRun && row.Outcome == OutcomeWouldReconcile) {
			t.Remaining++
		}
	}
	r.Totals = t
}
