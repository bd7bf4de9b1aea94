package planner

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/replayctl/replayctl/fault"
	"github.com/replayctl/replayctl/manifest"
)

// NoTargetsError refuses a plan in which no event is a target: recording a job and a manifest
// for it would only let a shadow of nothing pass. It says which exclusions took the messages,
// the largest first, and what to do about each.
type NoTargetsError struct {
	Stream string
	// Causes are the exclusions that took the scanned messages, each a sentence with its fix.
	Causes []string
}

// Error names the stream and every cause.
func (e *NoTargetsError) Error() string {
	return fmt.Sprintf("plan of stream %s found no target, so no job was recorded and no manifest written: %s",
		e.Stream, strings.Join(e.Causes, "; "))
}

// Is makes a NoTargetsError match ErrNoTargets.
func (e *NoTargetsError) Is(target error) bool { return target == ErrNoTargets }

// Kind is fault.Invalid, as ErrNoTargets'.
func (e *NoTargetsError) Kind() fault.Kind { return fault.Invalid }

// noTargets explains a plan without targets from its manifest's figures.
func noTargets(m *manifest.Manifest) error {
	s, src := m.Stats, m.Source
	type cause struct {
		n        int64
		sentence string
	}
	var causes []cause
	add := func(n int64, format string, args ...any) {
		if n > 0 {
			causes = append(causes, cause{n, fmt.Sprintf(format, args...)})
		}
	}
	messages, events := s.Scanned, s.Candidates
	add(s.MissingOriginalSubject, "%d of %d messages have no %s header: is %s a source stream? Use --backfill",
		s.MissingOriginalSubject, messages, src.Headers.OriginalSubject, src.Stream)
	add(s.MissingEventID+s.InvalidEventID, "%d of %d messages have no usable %s header and cannot be deduplicated: fix the producer (or pass --header-event-id if it uses another name)",
		s.MissingEventID+s.InvalidEventID, messages, src.Headers.EventID)
	add(s.OverMaxPayload, "%d of %d messages are too large to replay within the server's max_payload: see the plan's overMaxPayload warning for the fix",
		s.OverMaxPayload, messages)
	add(s.NotMatchingFailureFilter, "%d of %d messages have a failure reason --failure-match %q does not match: widen it",
		s.NotMatchingFailureFilter, messages, src.FailureMatch)
	if m.SourceKind() == manifest.SourceBackfill {
		add(s.NotProcessed, "%d of %d events have no completed row under any version, so there is nothing to re-process: is %s a DLQ? Plan without --backfill",
			s.NotProcessed, events, src.Stream)
		add(s.AlreadyCompleted, "%d of %d events already completed under effect version %d", s.AlreadyCompleted, events, m.EffectVersion.To)
	} else {
		add(s.AlreadyCompleted, "%d of %d events already completed (%s): a DLQ replay never repeats what is done; `replayctl drain JOB` removes a finished job's messages from the DLQ, and --backfill re-processes completed events on purpose",
			s.AlreadyCompleted, events, completedBySentence(s.AlreadyCompletedBy))
	}
	add(s.ExcludedInOtherJob, "%d of %d events are targets of jobs that have not finished (%s): finish or cancel them first (`replayctl status JOB`)",
		s.ExcludedInOtherJob, events, otherJobsText(m))
	// Kept out before the ledger join, so not among the candidates: counted over both.
	add(s.FailedAfterReplay, "%d of %d events failed again after replays by replayctl (failedAfterReplay): fix the cause, or pass --include-failed-replays",
		s.FailedAfterReplay, events+s.FailedAfterReplay)
	add(s.NotSelected+s.WhereNotJSON+s.WhereErrors, "%d of %d messages were left out by the selection (--ids-from, --exclude-ids-from, --failure-group, --where): widen it",
		s.NotSelected+s.WhereNotJSON+s.WhereErrors, messages)
	add(s.ExcludedUncertain, "%d of %d events are uncertain: settle them with `replayctl reconcile`", s.ExcludedUncertain, events)
	add(s.ExcludedInFlight, "%d of %d events are being processed right now: plan again once they settle", s.ExcludedInFlight, events)
	add(s.DuplicateInSource+s.LedgerPayloadMismatch, "%d of %d events carry conflicting payloads: review them by hand",
		s.DuplicateInSource+s.LedgerPayloadMismatch, events)
	if len(causes) == 0 {
		causes = append(causes, cause{0, fmt.Sprintf("stream %s holds no message inside the boundary (subject %q, since %s, until %s): check --subject, --since and --until",
			src.Stream, src.SubjectFilter, timeOrNone(src.Since), timeOrNone(src.Until))})
	}
	slices.SortStableFunc(causes, func(a, b cause) int { return cmp.Compare(b.n, a.n) })
	out := &NoTargetsError{Stream: src.Stream}
	for _, c := range causes {
		out.Causes = append(out.Causes, c.sentence)
	}
	return out
}
