package shadow

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/replayctl/replayctl/internal/atomicfile"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/manifest"
)

// Report is one shadow run's outcome, and the report file's JSON. Only Sample.Items[].Changed
// carries result values; everything else is IDs, paths and counts.
type Report struct {
	JobID          string `json:"jobId"`
	ManifestDigest string `json:"manifestDigest"`
	Consumer       string `json:"consumer"`
	// Reason, Ticket and PlannedBy are the plan's, for whoever reviews the report.
	Reason    string `json:"reason"`
	Ticket    string `json:"ticket,omitempty"`
	PlannedBy string `json:"plannedBy"`
	// Selection and ToSubject are how the plan picked its events and where they replay, when it
	// said (the manifest's source).
	Selection *manifest.Selection `json:"selection,omitempty"`
	ToSubject string              `json:"toSubject,omitempty"`
	// Subject is the responder's request subject, protocol.ShadowSubject(Consumer).
	Subject        string                 `json:"subject"`
	EffectVersion  manifest.EffectVersion `json:"effectVersion"`
	WriteForbidden bool                   `json:"writeForbidden"`
	StartedAt      time.Time              `json:"startedAt"`
	FinishedAt     time.Time              `json:"finishedAt"`
	// Seed orders the sample: the first 16 hex digits of the manifest digest.
	Seed   string `json:"seed"`
	Totals Totals `json:"totals"`
	Sample Sample `json:"sample"`
	// Fields summarises, per result path over the sample, how often it changed, was noise or was
	// ignored; sorted by path.
	Fields  []FieldSummary `json:"fields"`
	Verdict Verdict        `json:"verdict"`
}

// Totals are the full pass's counts over every target.
type Totals struct {
	Targets int64 `json:"targets"`
	// Answered counts replies (ok or error); Identical, Changed, NoOriginal and Failed split the
	// ok ones.
	Answered   int64 `json:"answered"`
	Identical  int64 `json:"identical"`
	Changed    int64 `json:"changed"`
	NoOriginal int64 `json:"noOriginal"`
	// Failed counts ok replies that are a terminal business failure ({"error": "..."}): execute
	// would count each as failed. They are not compared with the original: FailedAgain counts
	// those whose original (the ledger's, or the sample's shadow under the old version) failed too.
	Failed      int64 `json:"failed"`
	FailedAgain int64 `json:"failedAgain"`
	// ComparedOnHash counts identical and changed targets whose original body was pruned, so only
	// hashes were compared (noise and ignored fields cannot be removed from a hash).
	ComparedOnHash int64 `json:"comparedOnHash"`
	// SealedNotOpened counts originals whose body the SDK sealed and this shadow could not open
	// (no --keyring, or not their key): compared on hashes, and counted in ComparedOnHash too.
	SealedNotOpened int64 `json:"sealedNotOpened,omitempty"`
	// EffectCountChanged counts the changed targets whose shadow would make another number of
	// external calls than the original recorded: a behaviour change even when the result is equal.
	EffectCountChanged int64 `json:"effectCountChanged"`
	ShadowErrors       int64 `json:"shadowErrors"`
	Timeouts           int64 `json:"timeouts"`
	NoResponder        int64 `json:"noResponder"`
	// SourceMissing counts targets whose DLQ message was deleted or no longer matches the plan.
	SourceMissing int64 `json:"sourceMissing"`
	// Refused counts targets whose request NATS would not send (over the server's max_payload).
	Refused int64 `json:"refused"`
	// ShadowExternalCalls is the verdict's measured figure: a passing verdict's is execute's call
	// budget (plus its --max-calls-over). MaxCallsPerTarget is the most one target would make,
	// what execute reserves for each target in flight.
	ShadowExternalCalls   int64 `json:"shadowExternalCalls"`
	MaxCallsPerTarget     int64 `json:"maxCallsPerTarget"`
	ExpectedExternalCalls int64 `json:"expectedExternalCalls"`
	// EffectKinds counts the shadow's external calls by kind.
	EffectKinds map[string]int64 `json:"effectKinds"`
	// Aborted says the full pass stopped early (or never started), AbortReason why.
	Aborted     bool   `json:"aborted"`
	AbortReason string `json:"abortReason,omitempty"`
}

// Sample is the deterministic diff sample.
type Sample struct {
	Seed string `json:"seed"`
	Size int    `json:"size"`
	// PerReason is how many targets of each stratum were sampled: a DLQ's failure groups
	// (dlq.FailureGroup, as inspect counts them), a backfill's previous outcomes.
	PerReason map[string]int `json:"perReason"`
	// Items are sorted by failure reason, then event ID.
	Items []SampleItem `json:"items"`
}

// Baseline is what a sampled result is compared with.
type Baseline string

// Baselines a sampled result is compared with.
const (
	// BaselineLedger is the original's retained result body.
	BaselineLedger Baseline = "ledger"
	// BaselineLedgerHash is the original's result hash, its body pruned: compared on hash only.
	BaselineLedgerHash Baseline = "ledger_hash"
	// BaselineShadowFrom is a shadow run under effectVersion.from, for events with no original.
	BaselineShadowFrom Baseline = "shadow_from"
	// BaselineNone means no original and no older version to shadow under (effectVersion.from is
	// 0: the ledger knew no version of the consumer at plan time).
	BaselineNone Baseline = "none"
)

// Outcome is what the comparison of a sampled event found.
type Outcome string

// Outcomes of a sampled event.
const (
	OutcomeIdentical     Outcome = "identical"
	OutcomeChanged       Outcome = "changed"
	OutcomeError         Outcome = "error"
	OutcomeUnanswered    Outcome = "unanswered"
	OutcomeSourceMissing Outcome = "source_missing"
	// OutcomeRefused is a request NATS would not send (over the server's max_payload).
	OutcomeRefused Outcome = "refused"
	// OutcomeNoOriginal is a shadow result with nothing to compare it with (BaselineNone).
	OutcomeNoOriginal Outcome = "no_original"
	// OutcomeFailed is a terminal business failure under the new version; FailedBefore says
	// whether the baseline failed too.
	OutcomeFailed Outcome = "failed"
)

// SampleItem is one sampled event's comparison.
type SampleItem struct {
	EventID       string `json:"eventId"`
	FailureReason string `json:"failureReason"`
	// Baseline is BaselineLedger, BaselineLedgerHash, BaselineShadowFrom or BaselineNone; empty
	// when the event never got that far (source missing).
	Baseline        Baseline `json:"baseline,omitempty"`
	BaselineVersion int      `json:"baselineVersion"`
	// Outcome is identical, changed, failed (a terminal business failure under the new
	// version), error (an error on one side or both), unanswered, source_missing, refused (NATS
	// would not send the request), or no_original (BaselineNone).
	Outcome Outcome `json:"outcome"`
	// FailedBefore says, for a failed outcome, that the baseline was a business failure too.
	FailedBefore bool `json:"failedBefore,omitempty"`
	// Changed lists the differing result paths with both values.
	Changed []FieldChange `json:"changed,omitempty"`
	// Noise and Ignored list the paths that differed but are noise or --ignore-field paths.
	Noise           []string `json:"noise,omitempty"`
	Ignored         []string `json:"ignored,omitempty"`
	OriginalEffects int      `json:"originalEffects"`
	ShadowEffects   int      `json:"shadowEffects"`
	// EffectsChanged says the external call counts differ, which makes the outcome changed.
	EffectsChanged bool   `json:"effectsChanged,omitempty"`
	Error          string `json:"error,omitempty"`
}

// FieldChange is one result path whose value differs, with the original's and the shadow's
// values; a side without the path has none. For array paths ("lines[*].sku") the values are the
// first differing pair.
type FieldChange struct {
	Path     string          `json:"path"`
	Original json.RawMessage `json:"original,omitempty"`
	Shadow   json.RawMessage `json:"shadow,omitempty"`
}

// FieldSummary counts, for one result path, the sampled events where it changed, was noise or
// was ignored.
type FieldSummary struct {
	Path    string `json:"path"`
	Changed int    `json:"changed"`
	Noise   int    `json:"noise"`
	Ignored int    `json:"ignored"`
}

// Verdict is pass or fail, with one sentence per failed threshold.
type Verdict struct {
	Pass       bool       `json:"pass"`
	Reasons    []string   `json:"reasons"`
	Thresholds Thresholds `json:"thresholds"`
	// Loosened says, for each threshold set looser than its default by a flag, what it let
	// through; empty when every threshold is the default or stricter.
	Loosened []string `json:"loosened"`
}

// WriteReport atomically replaces path with r as indented JSON, mode 0600 (changed fields carry
// result values, which may hold personal data): a temporary file in the same directory, synced,
// then renamed over path.
func WriteReport(path string, r *Report) error {
	if err := writeReport(path, r); err != nil {
		return fmt.Errorf("write shadow report %s: %w", path, err)
	}
	return nil
}

// writeReport makes the report 0600: it holds result values, which may be personal data.
func writeReport(path string, r *Report) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	data = clip.JSONBidi(data)
	return atomicfile.Write(path, 0o600, func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	})
}
