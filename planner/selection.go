package planner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/fault"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/protocol"
)

// maxShownBadIDs is how many invalid IDs of a file a refusal quotes.
const maxShownBadIDs = 5

// normaliseSelection checks the selection options and compiles --where.
func (o *Options) normaliseSelection(add func(string, ...any)) {
	for _, l := range []struct {
		flag, from string
		ids        []string
	}{{"--ids-from", o.IDsFrom, o.IDs}, {"--exclude-ids-from", o.ExcludeIDsFrom, o.ExcludeIDs}} {
		var bad []string
		for i, id := range l.ids {
			if err := protocol.ValidateEventID(id); err != nil && len(bad) < maxShownBadIDs {
				bad = append(bad, fmt.Sprintf("line %d: %v", i+1, err))
			}
		}
		if len(bad) > 0 {
			add("%s %s: %s", l.flag, l.from, strings.Join(bad, "; "))
		}
		if l.ids != nil && len(l.ids) == 0 {
			add("%s %s: the file holds no event ID (one a line)", l.flag, l.from)
		}
	}
	if o.Where != "" {
		w, err := compileWhere(o.Where)
		if err != nil {
			add("--where: %v", err)
		}
		o.where = w
	}
	if g := dlq.FailureGroup(o.FailureGroup); g != o.FailureGroup {
		add("--failure-group %q is a failure reason, not a group: it belongs to group %q (as inspect prints it); pass --failure-group %q",
			o.FailureGroup, g, g)
	}
	if o.Backfill && (o.FailureGroup != "") {
		add("--failure-group reads a DLQ message's failure reason; a backfill's messages never failed")
	}
	if o.ToSubject != "" {
		if o.Backfill {
			add("--to-subject: a backfill replays each original to its own subject")
		} else if err := protocol.ValidatePublishSubject(o.ToSubject); err != nil {
			add("--to-subject: %v", err)
		}
	}
	for _, h := range o.StripHeaders {
		if err := protocol.ValidateHeaderName(h); err != nil {
			add("--strip-header %q: %v", h, err)
		} else if why := dlq.Unstrippable(h, dlq.WithDefaults(o.Headers)); why != "" {
			add("--strip-header %s: never stripped: %s", h, why)
		}
	}
}

// selection is the manifest's record of what the operator picked; nil when nothing was.
func (o *Options) selection(found map[string]bool) *manifest.Selection {
	if o.IDs == nil && o.ExcludeIDs == nil && o.FailureGroup == "" && o.Where == "" {
		return nil
	}
	s := &manifest.Selection{FailureGroup: o.FailureGroup, Where: o.Where}
	if o.IDs != nil {
		s.IDs = idList(o.IDsFrom, o.IDs, found)
	}
	if o.ExcludeIDs != nil {
		s.ExcludeIDs = idList(o.ExcludeIDsFrom, o.ExcludeIDs, found)
	}
	return s
}

// idList records a file of IDs: its digest covers the sorted unique IDs, so the same set in
// another order is the same selection; the IDs no scanned message carried are listed.
func idList(from string, ids []string, found map[string]bool) *manifest.IDList {
	uniq := slices.Compact(slices.Sorted(slices.Values(ids)))
	h := sha256.New()
	for _, id := range uniq {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	l := &manifest.IDList{From: from, Count: len(uniq), Digest: "sha256:" + hex.EncodeToString(h.Sum(nil))}
	for _, id := range uniq {
		if !found[id] {
			l.NotFound++
			if len(l.NotFoundIDs) < manifest.MaxListedSeqs {
				l.NotFoundIDs = append(l.NotFoundIDs, id)
			}
		}
	}
	return l
}

// ErrToSubjectNotCaptured is returned when no stream captures plan's --to-subject: a replay
// published there would be lost (exit code 2).
var ErrToSubjectNotCaptured = fault.New(fault.Invalid, "no stream captures --to-subject")

// ErrToSubjectIsSource is returned when the stream plan scans captures its --to-subject: every
// replay would land back in the DLQ, never reach the consumer, and stall execute at its canary
// (exit code 2).
var ErrToSubjectIsSource = fault.New(fault.Invalid, "the source stream captures --to-subject")

// checkToSubject refuses a --to-subject the source stream captures or no stream captures, and
// warns when the stream that captures it has no durable named after the consumer (the SDK's
// default): the replays may reach nobody who records them.
func checkToSubject(ctx context.Context, js jetstream.JetStream, subject string, source *jetstream.StreamInfo, consumer string) (warning string, err error) {
	if subject == "" {
		return "", nil
	}
	for _, filter := range source.Config.Subjects {
		if subjectMatches(filter, subject) {
			return "", fmt.Errorf("%w: --to-subject %s is captured by stream %s (subjects %q), the stream this plan reads: each replay would land back in it, never reach consumer %s, and stall execute at its canary; give the subject the consumer's own stream captures (`nats stream ls`, `nats consumer info STREAM %s`)",
				ErrToSubjectIsSource, subject, source.Config.Name, filter, consumer, consumer)
		}
	}
	stream, err := js.StreamNameBySubject(ctx, subject)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return "", fmt.Errorf("%w: --to-subject %s: no JetStream stream on this server captures it, so the replays would be lost; give a subject the consumer's stream holds (`nats stream ls`)",
			ErrToSubjectNotCaptured, subject)
	}
	if err != nil {
		return "", fmt.Errorf("--to-subject %s: find the stream that captures it: %w", subject, err)
	}
	if stream == source.Config.Name {
		return "", fmt.Errorf("%w: --to-subject %s is captured by stream %s, the stream this plan reads; give the subject the consumer's own stream captures",
			ErrToSubjectIsSource, subject, stream)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := js.Consumer(ctx, stream, consumer); errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Sprintf("--to-subject %s is captured by stream %s, which has no durable consumer named %s: unless a consumer of another name handles it there, the replays reach no handler that records them and execute stalls at its canary (check `nats consumer ls %s`)",
			subject, stream, consumer, stream), nil
	} else if err != nil {
		return fmt.Sprintf("--to-subject %s: could not read durable %s of stream %s (%v); check that it is the consumer's stream", subject, consumer, stream, err), nil
	}
	return "", nil
}

// subjectMatches reports whether a stream's subject filter (with * and > wildcards) captures a
// literal subject, as the server decides it.
func subjectMatches(filter, subject string) bool { return server.SubjectMatchesFilter(subject, filter) }

// selectionWarnings tells what the selection could not do as asked: IDs of a file no message
// carried, bodies --where could not read, messages it could not evaluate on.
func selectionWarnings(m *manifest.Manifest, c scanCounts) []string {
	var w []string
	if sel := m.Source.Selection; sel != nil {
		for _, l := range []struct {
			flag string
			list *manifest.IDList
		}{{"--ids-from", sel.IDs}, {"--exclude-ids-from", sel.ExcludeIDs}} {
			if l.list != nil && l.list.NotFound > 0 {
				w = append(w, fmt.Sprintf("%d of the %d event IDs of %s %s are in no message of the scanned boundary (e.g. %s); they are listed in the manifest's source.selection, none was dropped silently",
					l.list.NotFound, l.list.Count, l.flag, l.list.From, strings.Join(l.list.NotFoundIDs[:min(3, len(l.list.NotFoundIDs))], ", ")))
			}
		}
	}
	if c.WhereNotJSON > 0 {
		w = append(w, fmt.Sprintf("%d messages have a body that is not JSON: --where never matches them (counted as whereNotJson)", c.WhereNotJSON))
	}
	if c.WhereErrors > 0 {
		w = append(w, fmt.Sprintf("--where could not be evaluated on %d messages and did not match them (counted as whereErrors), e.g.: %s", c.WhereErrors, c.WhereError))
	}
	return w
}

// dryRunWarnings says what a dry run left out that the real plan does; inspect, which never
// records anything, is not told it recorded nothing.
func dryRunWarnings(m *manifest.Manifest, inspecting bool) []string {
	var w []string
	if !inspecting {
		w = append(w, fmt.Sprintf("dry run: nothing was recorded (no manifest file, no job %s, no audit entry); the real plan may differ if the DLQ or the ledger changes before it", m.ID))
	}
	if m.Stats.EvidenceExpired > 0 {
		w = append(w, fmt.Sprintf("dry run: the consumer's look-up was not asked about the %d events whose evidence expired (its answers are written to the ledger); the real plan asks it", m.Stats.EvidenceExpired))
	}
	return w
}
