package executor

import (
	"time"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/protocol"
)

// Preflight is what a run would do, known once every gate passed: what the confirmation shows and
// what a dry run reports.
type Preflight struct {
	JobID          string                 `json:"jobId"`
	ManifestDigest string                 `json:"manifestDigest"`
	Consumer       string                 `json:"consumer"`
	EffectVersion  manifest.EffectVersion `json:"effectVersion"`
	WriteForbidden bool                   `json:"writeForbidden"`
	// JobStatus is the job's status before this run: shadowed for a first run, executing for a
	// run that continues an interrupted one.
	JobStatus jobtype.Status `json:"status"`
	Resume    bool           `json:"resume"`
	// Verdict is the passing shadow verdict the run relies on.
	Verdict VerdictRef `json:"verdict"`
	// Targets is the manifest's target count; Counts where they stand in the ledger now.
	Targets int64    `json:"targets"`
	Counts  Progress `json:"counts"`
	Drift   Drift    `json:"drift"`
	// ToPublish is how many targets this run would publish: those without a row under the new
	// version, less the drifted ones it skips.
	ToPublish int64 `json:"toPublish"`
	// FirstTargets are the first targets it would publish, in stream order.
	FirstTargets          []PlannedPublish `json:"firstTargets"`
	ExpectedExternalCalls int64            `json:"expectedExternalCalls"`
	// CallBudget is the calls the run may start: Budget.Budget, where Budget says which figure
	// it came from (the shadow verdict's measured calls, or the plan's).
	CallBudget int64      `json:"callBudget"`
	Budget     CallBudget `json:"callBudgetSource"`
	Guards     Guards     `json:"guards"`
	// Durable is the consumer whose pending count throttles; DurableFound says whether it exists.
	Durable      Durable `json:"durable"`
	DurableFound bool    `json:"durableFound"`
	Rate         float64 `json:"rate"`
	MaxInFlight  int     `json:"maxInFlight"`
	// Canary is how many targets this run publishes and lets settle, judged by every guard,
	// before it opens Rate and MaxInFlight; 0 when it opens them at once.
	Canary int64 `json:"canary"`
	// DedupWindow measures ToPublish at Rate against the duplicate window of the stream the
	// replays land in; nil when nothing is left to publish.
	DedupWindow *protocol.DedupWindow `json:"dedupWindow,omitempty"`
	// Warnings are what the operator should know before the run publishes; Options.Warn is told
	// each one once the gates passed.
	Warnings []string `json:"warnings"`
	// Approvals is where the job stands against its consumer's approval policy; nil for a run
	// that continues an interrupted one (its approvals were checked when it started).
	Approvals *approval.State `json:"approvals,omitempty"`
}

// VerdictRef names a shadow verdict.
type VerdictRef struct {
	ID    int64     `json:"verdictId"`
	At    time.Time `json:"at"`
	Actor string    `json:"actor"`
}

// PlannedPublish is one target as a run would publish it.
type PlannedPublish struct {
	EventID   string `json:"eventId"`
	Subject   string `json:"subject"`
	StreamSeq uint64 `json:"dlqStreamSeq"`
	MsgID     string `json:"msgId"`
}

// Drift is how many targets' ledger rows changed since plan, and what the gate made of it.
type Drift struct {
	Checked  int64                `json:"checked"`
	Drifted  int64                `json:"drifted"`
	Ratio    float64              `json:"ratio"`
	MaxRatio float64              `json:"maxRatio"`
	ByKind   map[string]int64     `json:"byKind"`
	Examples []ledger.DriftTarget `json:"examples"`
}

// Progress is where a job's targets stand (job.Progress): what execute shows while it runs.
type Progress = job.Progress

// StopKind says why a run ended before its end, or ended with a guard exceeded.
type StopKind string

// Stop kinds.
const (
	StopCallBudget StopKind = "call_budget"
	StopErrorRate  StopKind = "error_rate"
	StopUncertain  StopKind = "uncertain"
	StopRetrying   StopKind = "retrying"
	StopStalled    StopKind = "stalled"
	StopCancelled  StopKind = "cancelled"
)

// Stop says why a run stopped.
type Stop struct {
	Kind    StopKind `json:"kind"`
	Message string   `json:"message"`
	// By is who cancelled, for StopCancelled.
	By string `json:"by,omitempty"`
	// Completed says a guard's threshold was passed on the job's last targets: the job completed
	// (it cannot be resumed), and the run still exits as a guard stop.
	Completed bool `json:"jobCompleted,omitempty"`
	// Canary says the guard stopped the run during its canary, before the rest was published.
	Canary bool `json:"canary,omitempty"`
}

// Result is one execute run.
type Result struct {
	Preflight  Preflight `json:"preflight"`
	DryRun     bool      `json:"dryRun"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
	// Published is how many targets this run published; Deduplicated how many of those JetStream
	// reported as duplicates of an earlier publish (the Nats-Msg-Id window).
	Published    int64 `json:"published"`
	Deduplicated int64 `json:"deduplicated"`
	// Of the publishes that failed (a NATS outage, a restart), LandedUnacknowledged were found in
	// the ledger when retried and not sent again; Republished were sent again and acknowledged.
	LandedUnacknowledged int64 `json:"landedUnacknowledged"`
	Republished          int64 `json:"republished"`
	// DrainReads counts what the run read from the ledger after its last publish, while it waited
	// for the outcomes: the re-counts of settled rows and the reads of the job's target statuses
	// (docs/decisions.md, "A fleet's in-flight window").
	DrainReads DrainReads `json:"drainReads"`
	// PublishStartedAt and PublishFinishedAt bound this run's publishing: from its first publish
	// to the acknowledgement of its last, when every target was published (zero otherwise). The
	// rest of the run waits for the consumer's outcomes.
	PublishStartedAt  time.Time `json:"publishStartedAt,omitzero"`
	PublishFinishedAt time.Time `json:"publishFinishedAt,omitzero"`
	// SettledAt is when the run found every target settled in the ledger, before it recorded the
	// end (the targets taking their outcomes, the job completed), which FinishedAt follows; zero
	// when the run stopped first.
	SettledAt time.Time `json:"settledAt,omitzero"`
	// CanaryPassedAt is when the canary settled and passed every guard (zero when the run had
	// none, or stopped before).
	CanaryPassedAt time.Time `json:"canaryPassedAt,omitzero"`
	// Final is where the targets stand at the end.
	Final Progress `json:"final"`
	// JobStatus is the job's status at the end.
	JobStatus jobtype.Status `json:"status"`
	Stop      *Stop          `json:"stop,omitempty"`
	// Uncertain and Failed list targets for manual review (the first maxListed of each).
	Uncertain []ledger.ReviewItem `json:"uncertainTargets"`
	Failed    []ledger.ReviewItem `json:"failedTargets"`
	// NotPublished lists targets that failed before they reached the consumer, with why.
	NotPublished []ledger.NotPublished `json:"notPublishedTargets,omitempty"`
}

// PublishRate is this run's targets published per second while it published, or 0 when it did not
// publish them all.
func (r *Result) PublishRate() float64 {
	d := r.PublishFinishedAt.Sub(r.PublishStartedAt).Seconds()
	if r.PublishFinishedAt.IsZero() || d <= 0 {
		return 0
	}
	return float64(r.Published) / d
}

// maxListed bounds the review lists a result carries; the ledger keeps them all.
const maxListed = 100

// DrainReads are a run's ledger reads after its last publish.
type DrainReads struct {
	SettledRecounts   int64 `json:"settledRecounts"`
	TargetStatusReads int64 `json:"targetStatusReads"`
}
