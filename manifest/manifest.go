// Package manifest defines the replay job manifest (apiVersion replayctl/v1): the frozen, reviewable
// boundary of one replay. It owns the type, its canonical encoding, its digest and its validation.
// It does no I/O beyond reading and writing the manifest file.
package manifest

import (
	"time"

	"github.com/replayctl/replayctl/jobtype"
)

// APIVersion is the only manifest schema this build reads and writes.
const APIVersion = "replayctl/v1"

// Manifest is one replay job as planned. Every field except Digest is covered by the digest.
type Manifest struct {
	APIVersion string `json:"apiVersion"`
	// Kind is KindManifest; the file is one of replayctl's JSON documents (docs/contract.md).
	Kind      string    `json:"kind"`
	ID        string    `json:"jobId"`
	CreatedAt time.Time `json:"createdAt"`
	CreatedBy string    `json:"createdBy"`
	Reason    string    `json:"reason"`
	Ticket    string    `json:"ticket,omitempty"`
	Consumer  string    `json:"consumer"`

	Source         Source        `json:"source"`
	EffectVersion  EffectVersion `json:"effectVersion"`
	WriteForbidden bool          `json:"writeForbidden"`

	Stats                 Stats         `json:"stats"`
	ExpectedExternalCalls int64         `json:"expectedExternalCalls"`
	ExternalCallsEstimate CallsEstimate `json:"externalCallsEstimate"`
	Excluded              Excluded      `json:"excluded"`
	// EvidenceLookup is what plan asked the consumer's look-up about the events whose evidence
	// expired, and what each answer did; omitted when nothing was asked.
	EvidenceLookup *EvidenceLookup `json:"evidenceLookup,omitempty"`

	// EventIDs are the replay targets, sorted by byte order and unique. Execute replays exactly these.
	EventIDs []string `json:"eventIds"`

	// Digest is "sha256:" + hex of the canonical encoding of every other field.
	Digest string `json:"manifestDigest"`
}

// KindManifest is a manifest's kind.
const KindManifest = "Manifest"

// Source kinds (docs/contract.md, "Source kinds").
const (
	// SourceDLQ is a stream of dead-lettered messages carrying the DLQ headers; targets are
	// events with no completed row under any version. A manifest without source.kind is one.
	SourceDLQ = jobtype.SourceDLQ
	// SourceBackfill is a retained stream of original messages; each replays to its own subject,
	// and targets are events completed under an older version than the job's.
	SourceBackfill = jobtype.SourceBackfill
)

// Source is the scan boundary the targets were chosen from.
type Source struct {
	// Kind is SourceDLQ or SourceBackfill; empty (manifests planned before backfill existed)
	// reads as SourceDLQ.
	Kind          string     `json:"kind,omitempty"`
	Stream        string     `json:"stream"`
	SubjectFilter string     `json:"subjectFilter,omitempty"`
	Since         *time.Time `json:"since,omitempty"`
	Until         *time.Time `json:"until,omitempty"`
	FailureMatch  string     `json:"failureMatch,omitempty"`
	Max           int        `json:"max,omitempty"`
	// Selection narrows the scanned messages to those an operator picked (plan's --ids-from,
	// --exclude-ids-from, --failure-group, --where); absent when none was given.
	Selection *Selection `json:"selection,omitempty"`
	// ToSubject replays every target to this subject instead of its Dlq-Original-Subject
	// (--to-subject): a renamed service, a canary instance.
	ToSubject string `json:"toSubject,omitempty"`
	// StripHeaders are headers removed from each replayed message (--strip-header); Event-Id and
	// the replay headers are never among them.
	StripHeaders []string `json:"stripHeaders,omitempty"`
	Headers      Headers  `json:"headers"`
	// FirstSeq and LastSeq are the stream sequences of the first and last message scanned (0 when none).
	FirstSeq uint64 `json:"firstSeq"`
	LastSeq  uint64 `json:"lastSeq"`
	// StreamLastSeq is the stream's last sequence when the scan started; later messages are outside the plan.
	StreamLastSeq uint64 `json:"streamLastSeq"`
}

// Headers names the DLQ headers the plan read.
type Headers struct {
	EventID         string `json:"eventId"`
	Reason          string `json:"reason"`
	OriginalSubject string `json:"originalSubject"`
	Attempts        string `json:"attempts"`
	FailedAt        string `json:"failedAt"`
}

// EffectVersion is the ledger version the replay moves from (highest known at plan time) and to.
type EffectVersion struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// Stats are the plan's figures. Counts of messages and counts of distinct event IDs are named so.
type Stats struct {
	// Scanned counts DLQ messages read inside the subject filter and time range.
	Scanned int64 `json:"scanned"`
	// MissingEventID counts scanned messages without an Event-Id header; InvalidEventID those whose
	// Event-Id is not valid (empty after trimming, over 256 bytes, not UTF-8, or with control characters).
	MissingEventID int64 `json:"missingEventId"`
	InvalidEventID int64 `json:"invalidEventId"`
	// MissingOriginalSubject counts messages with an event ID but no original-subject header: execute
	// could not route them, so they are excluded.
	MissingOriginalSubject int64 `json:"missingOriginalSubject"`
	// NotMatchingFailureFilter counts messages whose failure reason does not match --failure-match.
	NotMatchingFailureFilter int64 `json:"notMatchingFailureFilter"`
	// OverMaxPayload counts usable messages whose replay (payload + the replay headers execute
	// adds) exceeds the NATS server's max_payload: excluded, since no publish could carry them.
	// Omitted when 0, so manifests written before it keep their digest.
	OverMaxPayload int64 `json:"overMaxPayload,omitempty"`
	// Candidates counts distinct event IDs left after the filters, before the ledger join.
	Candidates int64 `json:"candidates"`
	// RepeatedInSource counts extra messages that repeat an event ID with the same payload (collapsed).
	RepeatedInSource int64 `json:"repeatedInSource"`
	// DuplicateInSource counts event IDs seen more than once with different payloads (conflicts, excluded).
	DuplicateInSource int64 `json:"duplicateInSource"`
	// LedgerPayloadMismatch counts event IDs whose payload hash differs from the ledger's request hash
	// (conflicts, excluded).
	LedgerPayloadMismatch int64 `json:"ledgerPayloadMismatch"`
	// AlreadyCompleted counts event IDs kept out as done: for a DLQ source, completed (or
	// reconciled) under any version, by a live delivery or an earlier job; for a backfill, under the
	// job's version. A write-forbidden replay's completion never counts: it made no call.
	AlreadyCompleted int64 `json:"alreadyCompleted"`
	// AlreadyCompletedBy splits AlreadyCompleted by the job whose replay completed the event, with
	// live completions under CompletedLive.
	AlreadyCompletedBy map[string]int64 `json:"alreadyCompletedBy,omitempty"`
	// CompletedUnderOlderVersion counts targets completed before under an older version: a
	// backfill's targets, whose effects the replay produces again; ExpectedExternalCalls accounts
	// for them. A DLQ plan has none.
	CompletedUnderOlderVersion int64 `json:"completedUnderOlderVersion"`
	// AlreadyCompletedRatio is (AlreadyCompleted + CompletedUnderOlderVersion) / Candidates.
	AlreadyCompletedRatio float64 `json:"alreadyCompletedRatio"`
	// ExcludedUncertain counts event IDs with an uncertain row or a lapsed lease (manual review first).
	ExcludedUncertain int64 `json:"excludedUncertain"`
	// ExcludedInFlight counts event IDs with a live processing lease.
	ExcludedInFlight int64 `json:"excludedInFlight"`
	// EvidenceExpired counts event IDs whose ledger evidence expired: their only rows are expired
	// tombstones, or they have no row while their message is older than the evidence window. They
	// are kept out of the targets: only the consumer's look-up can say whether they happened
	// (docs/ledger.md, "Expired evidence"). Omitted when 0, so manifests written before it keep
	// their digest.
	EvidenceExpired int64 `json:"evidenceExpired,omitempty"`
	// EvidenceReconciled counts event IDs whose evidence had expired and which the consumer's
	// look-up, asked by plan, said happened: recorded reconciled in the ledger, kept out.
	EvidenceReconciled int64 `json:"evidenceReconciled,omitempty"`
	// ExcludedInOtherJob counts event IDs that a job of the consumer which has not finished
	// (planned, shadowing, shadowed, executing or paused) targets: that job may still replay them.
	ExcludedInOtherJob int64 `json:"excludedInOtherJob,omitempty"`
	// NotProcessed counts, for a backfill, event IDs with no completed row under any version
	// (never processed, or still on their way): there is nothing to re-process.
	NotProcessed int64 `json:"notProcessed,omitempty"`
	// NotSelected counts usable messages the selection left out (--ids-from, --exclude-ids-from,
	// --failure-group, --where); WhereNotJSON those --where could not read as JSON (never
	// matched); WhereErrors those the expression could not be evaluated on (not matched).
	NotSelected int64 `json:"notSelected,omitempty"`
	// FailedAfterReplay counts events kept out because this tool's replays of them were
	// dead-lettered again at least the loop guard's number of times (--include-failed-replays
	// takes them in).
	FailedAfterReplay int64 `json:"failedAfterReplay,omitempty"`
	WhereNotJSON      int64 `json:"whereNotJson,omitempty"`
	WhereErrors       int64 `json:"whereErrors,omitempty"`
	// OverMax counts eligible event IDs left out by --max (the oldest by stream sequence are kept).
	OverMax int64 `json:"overMax"`
	// Targets is len(EventIDs).
	Targets int64 `json:"targets"`
	// FailureReasons is the histogram of failure reasons over a DLQ plan's targets (empty for a
	// backfill, whose messages never failed).
	FailureReasons map[string]int64 `json:"failureReasons"`
	// PreviousOutcomes is, for a backfill, the histogram over the targets of the outcome they
	// completed with, by version: "v1 completed", "v1 business failure".
	PreviousOutcomes map[string]int64 `json:"previousOutcomes,omitempty"`
}

// Selection is how an operator picked the events of a plan, beyond the stream's boundary.
type Selection struct {
	// IDs (--ids-from) keeps only these event IDs; ExcludeIDs (--exclude-ids-from) leaves these out.
	IDs        *IDList `json:"ids,omitempty"`
	ExcludeIDs *IDList `json:"excludeIds,omitempty"`
	// FailureGroup keeps messages whose failure reason falls in this group (dlq.FailureGroup).
	FailureGroup string `json:"failureGroup,omitempty"`
	// Where is a CEL expression over payload and headers that a message must satisfy.
	Where string `json:"where,omitempty"`
}

// IDList is a list of event IDs an operator gave in a file: what the file was, how many IDs, their
// digest, and the IDs no scanned message carried (never dropped silently).
type IDList struct {
	From   string `json:"from"`
	Count  int    `json:"count"`
	Digest string `json:"digest"`
	// NotFound counts the IDs no message in the boundary carried; NotFoundIDs lists the first
	// MaxListedSeqs of them.
	NotFound    int      `json:"notFound"`
	NotFoundIDs []string `json:"notFoundIds,omitempty"`
}

// CompletedLive is the AlreadyCompletedBy key of events completed by a live delivery (no job).
// It is not a valid job ID, so it cannot collide with one.
const CompletedLive = "(live)"

// Strata is the histogram the targets are grouped by, for the shadow sample and the review: the
// failure reasons of a DLQ plan, the previous outcomes of a backfill.
func (m *Manifest) Strata() map[string]int64 {
	if m.Source.Kind == SourceBackfill {
		return m.Stats.PreviousOutcomes
	}
	return m.Stats.FailureReasons
}

// CallsEstimate says how ExpectedExternalCalls was estimated.
type CallsEstimate struct {
	Method string `json:"method"`
	// KnownTargets are targets with a completed effect in the ledger; KnownCalls the sum of their
	// recorded effect_count (latest completed version).
	KnownTargets int64 `json:"knownTargets"`
	KnownCalls   int64 `json:"knownCalls"`
	// EstimatedTargets have no completed effect; each is charged MeanPerEffect, the mean effect_count
	// over the consumer's latest SampleSize completed effects (at most 20,000; 1 when there are none).
	EstimatedTargets int64   `json:"estimatedTargets"`
	MeanPerEffect    float64 `json:"meanPerEffect"`
	SampleSize       int64   `json:"sampleSize"`
}

// Excluded lists what the plan kept out of the targets, by event ID (no payloads).
type Excluded struct {
	Uncertain []LedgerExclusion `json:"uncertain"`
	InFlight  []LedgerExclusion `json:"inFlight"`
	Conflicts []Conflict        `json:"conflicts"`
	// AlreadyCompleted lists the first MaxListedExcluded events kept out as done, with the
	// version and job that completed them (the counts are in Stats).
	AlreadyCompleted []CompletedExclusion `json:"alreadyCompleted,omitempty"`
	// InOtherJob lists the first MaxListedExcluded events an unfinished job targets.
	InOtherJob []JobExclusion `json:"inOtherJob,omitempty"`
	// NotProcessed lists the first MaxListedExcluded event IDs of a backfill with no completed row.
	NotProcessed []string `json:"notProcessed,omitempty"`
	// FailedAfterReplay are the first MaxListedSeqs event IDs Stats.FailedAfterReplay counts.
	FailedAfterReplay []string `json:"failedAfterReplay,omitempty"`
	// MissingEventIDSeqs are stream sequences of messages without a usable Event-Id or without an
	// original subject (the first MaxListedSeqs; the counts are in Stats).
	MissingEventIDSeqs []uint64 `json:"missingEventIdSeqs"`
	// Unusable says, for each sequence MissingEventIDSeqs lists, why the message could not be
	// replayed (no Event-Id, an invalid one, no original subject, one execute could not publish
	// to); omitted when empty.
	Unusable []UnusableMessage `json:"unusable,omitempty"`
	// EvidenceExpired lists the event IDs Stats.EvidenceExpired counts, with the version of their
	// latest tombstone (state expired) or, for an event without a row, version 0 and state absent;
	// omitted when empty.
	EvidenceExpired []LedgerExclusion `json:"evidenceExpired,omitempty"`
	// OverMaxPayloadSeqs are stream sequences of the messages Stats.OverMaxPayload counts (the
	// first MaxListedSeqs); omitted when empty, so manifests written before it keep their digest.
	OverMaxPayloadSeqs []uint64 `json:"overMaxPayloadSeqs,omitempty"`
}

// UnusableMessage is a DLQ message plan could not make a target of, and why.
type UnusableMessage struct {
	Seq uint64 `json:"seq"`
	Why string `json:"why"`
}

// MaxListedSeqs bounds Excluded.MissingEventIDSeqs and OverMaxPayloadSeqs so a broken producer cannot bloat the manifest.
const MaxListedSeqs = 1000

// MaxListedExcluded bounds Excluded.AlreadyCompleted, InOtherJob and NotProcessed: a DLQ that
// mostly holds done events would otherwise list them all.
const MaxListedExcluded = 1000

// CompletedExclusion is an event kept out because it is already done.
type CompletedExclusion struct {
	EventID       string `json:"eventId"`
	EffectVersion int    `json:"effectVersion"`
	// JobID is the job whose replay completed it; empty for a live completion.
	JobID string `json:"jobId,omitempty"`
}

// JobExclusion is an event kept out because a job that has not finished targets it.
type JobExclusion struct {
	EventID   string `json:"eventId"`
	JobID     string `json:"jobId"`
	JobStatus string `json:"status"`
}

// LedgerExclusion is an event ID kept out because of its ledger row.
type LedgerExclusion struct {
	EventID        string     `json:"eventId"`
	EffectVersion  int        `json:"effectVersion"`
	State          string     `json:"state"`
	LeaseOwner     string     `json:"leaseOwner,omitempty"`
	LeaseExpiresAt *time.Time `json:"leaseExpiresAt,omitempty"`
}

// Conflict is an event ID whose payloads disagree, in the DLQ ("source") or with the ledger ("ledger").
type Conflict struct {
	EventID       string   `json:"eventId"`
	Where         string   `json:"where"`
	PayloadHashes []string `json:"payloadHashes"`
}

// SourceKind is Source.Kind with the empty kind of older manifests read as SourceDLQ.
func (m *Manifest) SourceKind() string {
	if m.Source.Kind == "" {
		return SourceDLQ
	}
	return m.Source.Kind
}

// Outcomes of a look-up plan asked about an event whose evidence expired.
const (
	LookupReconciled = "reconciled" // happened: recorded reconciled, kept out
	LookupTarget     = "target"     // not happened: a target
	LookupKeptOut    = "keptOut"    // unknown, unanswered or changed meanwhile: stays evidenceExpired
)

// EvidenceLookup summarises plan's look-ups on expired evidence (IDs, verdicts, counts: no detail
// text, which is the consumer's).
type EvidenceLookup struct {
	Asked      int64 `json:"asked"`
	Reconciled int64 `json:"reconciled"`
	Targets    int64 `json:"targets"`
	KeptOut    int64 `json:"keptOut"`
	// Stopped says why some events were not asked or not answered (no responder, hung responder).
	Stopped string          `json:"stopped,omitempty"`
	Events  []LookupOutcome `json:"events"`
}

// LookupOutcome is one event's look-up: its verdict (empty when unanswered) and what it did.
type LookupOutcome struct {
	EventID string `json:"eventId"`
	Verdict string `json:"verdict,omitempty"`
	Outcome string `json:"outcome"`
}
