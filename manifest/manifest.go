// Package manifest defines the replay job manifest (apiVersion replayctl/v1): the frozen, reviewable
// boundary of one replay. It owns the type, its canonical encoding, its digest and its validation.
// It does no I/O beyond reading and writing the manifest file.
package manifest

import "time"

// APIVersion is the only manifest schema this build reads and writes.
const APIVersion = "replayctl/v1"

// Manifest is one replay job as planned. Every field except Digest is covered by the digest.
type Manifest struct {
	APIVersion string    `json:"apiVersion"`
	ID         string    `json:"id"`
	CreatedAt  time.Time `json:"createdAt"`
	CreatedBy  string    `json:"createdBy"`
	Reason     string    `json:"reason"`
	Ticket     string    `json:"ticket,omitempty"`
	Consumer   string    `json:"consumer"`

	Source         Source        `json:"source"`
	EffectVersion  EffectVersion `json:"effectVersion"`
	WriteForbidden bool          `json:"writeForbidden"`

	Stats                 Stats         `json:"stats"`
	ExpectedExternalCalls int64         `json:"expectedExternalCalls"`
	ExternalCallsEstimate CallsEstimate `json:"externalCallsEstimate"`
	Excluded              Excluded      `json:"excluded"`

	// EventIDs are the replay targets, sorted by byte order and unique. Execute replays exactly these.
	EventIDs []string `json:"eventIds"`

	// Digest is "sha256:" + hex of the canonical encoding of every other field.
	Digest string `json:"digest"`
}

// Source is the scan boundary the targets were chosen from.
type Source struct {
	Stream        string     `json:"stream"`
	SubjectFilter string     `json:"subjectFilter,omitempty"`
	Since         *time.Time `json:"since,omitempty"`
	Until         *time.Time `json:"until,omitempty"`
	FailureMatch  string     `json:"failureMatch,omitempty"`
	Max           int        `json:"max,omitempty"`
	Headers       Headers    `json:"headers"`
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
	// AlreadyCompleted counts event IDs already completed under the target version (skipped).
	AlreadyCompleted int64 `json:"alreadyCompleted"`
	// CompletedUnderOlderVersion counts targets completed before under an older version: replaying them
	// produces their effects again; ExpectedExternalCalls accounts for them.
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
	// OverMax counts eligible event IDs left out by --max (the oldest by stream sequence are kept).
	OverMax int64 `json:"overMax"`
	// Targets is len(EventIDs).
	Targets int64 `json:"targets"`
	// FailureReasons is the histogram of failure reasons over the targets.
	FailureReasons map[string]int64 `json:"failureReasons"`
}

// CallsEstimate says how ExpectedExternalCalls was estimated.
type CallsEstimate struct {
	Method string `json:"method"`
	// KnownTargets are targets with a completed effect in the ledger; KnownCalls the sum of their
	// recorded effect_count (latest completed version).
	KnownTargets int64 `json:"knownTargets"`
	KnownCalls   int64 `json:"knownCalls"`
	// EstimatedTargets have no completed effect; each is charged MeanPerEffect, the mean effect_count
	// over the consumer's SampleSize completed effects (1 when there are none).
	EstimatedTargets int64   `json:"estimatedTargets"`
	MeanPerEffect    float64 `json:"meanPerEffect"`
	SampleSize       int64   `json:"sampleSize"`
}

// Excluded lists what the plan kept out of the targets, by event ID (no payloads).
type Excluded struct {
	Uncertain []LedgerExclusion `json:"uncertain"`
	InFlight  []LedgerExclusion `json:"inFlight"`
	Conflicts []Conflict        `json:"conflicts"`
	// MissingEventIDSeqs are stream sequences of messages without a usable Event-Id or without an
	// original subject (the first MaxListedSeqs; the counts are in Stats).
	MissingEventIDSeqs []uint64 `json:"missingEventIdSeqs"`
	// EvidenceExpired lists the event IDs Stats.EvidenceExpired counts, with the version of their
	// latest tombstone (state expired) or, for an event without a row, version 0 and state absent;
	// omitted when empty.
	EvidenceExpired []LedgerExclusion `json:"evidenceExpired,omitempty"`
	// OverMaxPayloadSeqs are stream sequences of the messages Stats.OverMaxPayload counts (the
	// first MaxListedSeqs); omitted when empty, so manifests written before it keep their digest.
	OverMaxPayloadSeqs []uint64 `json:"overMaxPayloadSeqs,omitempty"`
}

// MaxListedSeqs bounds Excluded.MissingEventIDSeqs and OverMaxPayloadSeqs so a broken producer cannot bloat the manifest.
const MaxListedSeqs = 1000

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
