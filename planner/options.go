// Package planner scans a JetStream DLQ stream, joins its event IDs against the ledger in bulk and
// produces the replay job's manifest and job record. It never prints; progress goes to a callback.
package planner

import (
	"golang.org/x/crypto/ssh"

	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/internal/atomicfile"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/protocol"
)

// Options is one plan request.
type Options struct {
	Consumer string
	// NewConsumer allows a consumer the ledger holds nothing for (no effects row, version or job):
	// a first replay. Without it such a consumer is refused as a probable typo, naming the known
	// ones, since a misspelt consumer would plan every DLQ message as never processed.
	NewConsumer bool
	Stream      string
	// Backfill makes Stream a retained stream of original messages instead of a DLQ: each
	// message replays to its own subject, and the targets are events completed under an older
	// version (re-processing after a fix), not events that never completed.
	Backfill      bool
	Reason        string
	Ticket        string
	SubjectFilter string
	Since, Until  *time.Time
	// FailureMatch is a regular expression matched against each message's failure reason.
	FailureMatch string
	// Max keeps at most this many targets, the oldest by stream sequence; 0 keeps all.
	Max int
	// IDs (--ids-from) keeps only messages with these event IDs, IDsFrom naming where they came
	// from; nil keeps all. ExcludeIDs (--exclude-ids-from) leaves these out.
	IDs, ExcludeIDs         []string
	IDsFrom, ExcludeIDsFrom string
	// FailureGroup keeps messages whose failure reason is in this group (dlq.FailureGroup).
	FailureGroup string
	// Where is a CEL expression over payload and headers a message must satisfy.
	Where string
	// ToSubject replays every target to this subject instead of its original one.
	ToSubject string
	// StripHeaders are left off every replay.
	StripHeaders []string
	// IncludeFailedReplays takes in events whose replays by this tool were dead-lettered again
	// FailedReplayLimit times or more; by default they are kept out as failedAfterReplay.
	IncludeFailedReplays bool
	// FailedReplayLimit is the loop guard's K; 0 means DefaultFailedReplayLimit.
	FailedReplayLimit int
	// DryRun plans without recording anything: no manifest file, no job, no audit entry, no
	// look-up (whose answers would be written).
	DryRun bool
	// where is Where compiled by Normalise.
	where *whereFilter
	// Signer, when set, signs the manifest (plan --sign-key): approvals then tell the planner by
	// key, not by name.
	Signer ssh.Signer
	// historyStart, set by Plan, is when the consumer's ledger history starts (its SDK's first
	// registration or the oldest imported row); zero when unknown.
	historyStart time.Time
	// histograms, set by Inspect, collects the scan's counts by group, subject, age and attempts.
	histograms *scanHistograms
	// EvidenceWindow is the consumer's evidence retention (consumer.Config.EvidenceRetention): an
	// event without a ledger row whose message is older than it is kept out as evidenceExpired,
	// like one whose rows are expired tombstones. 0 means the retention the consumer's SDK
	// registered in the ledger, else DefaultEvidenceWindow; a value overrides both, with a
	// warning when it differs from the registered one.
	EvidenceWindow time.Duration
	// NoLookup skips asking the consumer's look-up about the events whose evidence expired: they
	// all stay kept out as evidenceExpired.
	NoLookup bool
	// EffectVersion is the version to replay under; 0 means one above the highest the ledger knows.
	EffectVersion  int
	WriteForbidden bool
	// Headers names the DLQ headers; empty names take dlq.DefaultHeaders.
	Headers manifest.Headers
	// OutputPath is where the manifest is written, atomically, before the job is committed.
	OutputPath string
	// Overwrite (--force) lets the manifest replace a file at OutputPath; without it an existing
	// file is refused before anything is scanned, and again when the manifest is written.
	Overwrite bool
	Actor     string
	Now       time.Time
	// JobID overrides the generated job ID (tests, reproducible demos).
	JobID string
	// Progress, when set, is called as the scan advances with messages scanned and the total expected.
	Progress func(scanned, total int64)
	// Stage, when set, is told in one line each step after the scan, whose length grows with the
	// DLQ but which has no count to show.
	Stage func(description string)
}

// DefaultFailedReplayLimit is how many times a replay by this tool may fail and be dead-lettered
// again before plan keeps the event out (the loop guard).
const DefaultFailedReplayLimit = 2

// DefaultEvidenceWindow is the consumer SDK's default EvidenceRetention: 400 days.
const DefaultEvidenceWindow = 400 * 24 * time.Hour

// sinceSkew is how far ahead of this host's clock --since may be, for a NATS server whose clock
// runs ahead.
const sinceSkew = time.Minute

// Normalise checks every option, reporting all problems at once as an *OptionsError, and fills the
// defaults. Plan calls it first; callers may call it earlier to refuse bad input before connecting.
func (o *Options) Normalise() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if o.Consumer == "" {
		add("--consumer is required")
	} else if err := protocol.ValidateConsumerName(o.Consumer); err != nil {
		add("--consumer: %v", err)
	}
	if o.Stream == "" {
		add("--stream is required (the DLQ stream to scan)")
	} else if err := protocol.ValidateStreamName(o.Stream); err != nil {
		add("--stream: %v", err)
	}
	if err := manifest.ValidateReason(o.Reason); err != nil {
		add("--reason: %v", err)
	} else if err := manifest.ValidateText(o.Reason, manifest.MaxReasonRunes); err != nil {
		add("--reason: %v", err)
	}
	if err := manifest.ValidateText(o.Ticket, manifest.MaxTicketRunes); err != nil {
		add("--ticket: %v", err)
	}
	if o.SubjectFilter != "" {
		if err := protocol.ValidateSubjectFilter(o.SubjectFilter); err != nil {
			add("--subject: %v", err)
		}
	}
	if o.Since != nil && o.Until != nil && !o.Since.Before(*o.Until) {
		add("--since %s is not before --until %s: the window holds no message; give an --until after --since", o.Since.UTC().Format(time.RFC3339Nano), o.Until.UTC().Format(time.RFC3339Nano))
	}
	if o.Backfill && o.FailureMatch != "" {
		add("--failure-match reads a DLQ message's failure reason; a backfill's messages never failed: filter with --subject, --since and --until")
	} else if o.FailureMatch != "" {
		if _, err := regexp.Compile(o.FailureMatch); err != nil {
			add("--failure-match %q is not a valid regular expression: %v", o.FailureMatch, err)
		}
	}
	o.normaliseSelection(add)
	if o.FailedReplayLimit < 0 {
		add("--failed-replay-limit %d: must be 1 or more", o.FailedReplayLimit)
	} else if o.FailedReplayLimit == 0 {
		o.FailedReplayLimit = DefaultFailedReplayLimit
	}
	if o.Max < 0 {
		add("--max %d: must be 0 (no limit) or more", o.Max)
	}
	switch {
	case o.EvidenceWindow < 0:
		add("--evidence-window %s: must be positive; omit it for the consumer's registered retention (or the SDK's default %s)", o.EvidenceWindow, DefaultEvidenceWindow)
	}
	if o.EffectVersion < 0 || o.EffectVersion > math.MaxInt32 {
		add("--effect-version %d: must be between 1 and %d (the ledger stores a PostgreSQL integer); omit it for one above the highest known", o.EffectVersion, math.MaxInt32)
	}
	if o.DryRun {
		o.NoLookup = true
	} else if o.OutputPath == "" {
		add("-o is required: the path the manifest is written to (or --dry-run, which writes nothing)")
	} else if dir := filepath.Dir(o.OutputPath); !atomicfile.DirExists(dir) {
		add("-o %s: directory %s does not exist; create it or write the manifest elsewhere", o.OutputPath, dir)
	} else if _, err := os.Lstat(o.OutputPath); err == nil && !o.Overwrite {
		add("-o %s: the file exists (an earlier plan's manifest?); pass --force to replace it, or write the manifest elsewhere", o.OutputPath)
	}
	o.Headers = dlq.WithDefaults(o.Headers)
	for _, h := range []struct{ flag, name string }{
		{"--header-event-id", o.Headers.EventID}, {"--header-reason", o.Headers.Reason},
		{"--header-original-subject", o.Headers.OriginalSubject}, {"--header-attempts", o.Headers.Attempts},
		{"--header-failed-at", o.Headers.FailedAt},
	} {
		if err := protocol.ValidateHeaderName(h.name); err != nil {
			add("%s: %v", h.flag, err)
		}
	}
	if o.JobID != "" {
		if err := protocol.ValidateJobID(o.JobID); err != nil {
			add("job ID: %v", err)
		}
	}
	if o.Actor == "" {
		o.Actor = "unknown"
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	o.Now = o.Now.UTC()
	// The DLQ stream's storage times are the server's past: a --since after the wall clock (not
	// Now, which only dates the job) selects nothing, and is most often a date typed in the wrong
	// year or a local time read as UTC. The margin absorbs clock skew with the NATS server.
	if wall := time.Now().UTC(); o.Since != nil && o.Since.After(wall.Add(sinceSkew)) {
		add("--since %s is in the future (now %s): no stored message can match; give a past time or a duration such as 6h",
			o.Since.UTC().Format(time.RFC3339), wall.Format(time.RFC3339))
	}
	if len(problems) > 0 {
		return &OptionsError{Problems: problems}
	}
	return nil
}
