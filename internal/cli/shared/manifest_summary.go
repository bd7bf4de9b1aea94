package shared

import (
	"cmp"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/manifest"
)

// Bounds of the lists show prints; the manifest (show --json) has them all.
const (
	showMaxExcluded = 20
	showMaxEventIDs = 10
)

// summarySection is one table of the manifest summary; total counts the rows before the cut.
type summarySection struct {
	title  string
	header []string
	rows   [][]string
	total  int
}

// PrintSummary renders a manifest for a person: the job, its counts and what it kept out, each
// list cut at a bound (the manifest itself has them all).
func PrintSummary(w io.Writer, isTTY bool, m *manifest.Manifest) error {
	sections := []summarySection{
		{title: "Job", rows: jobRows(m, isTTY)},
		{title: "Stats", rows: statsRows(&m.Stats)},
		strataSection(m),
		{title: "Already completed by", header: []string{"JOB", "EVENTS"}, rows: cmdutil.ReasonRows(m.Stats.AlreadyCompletedBy)},
		{title: "Excluded: uncertain (check and reconcile by hand, never replay)", header: exclusionHeader,
			rows: exclusionRows(m.Excluded.Uncertain), total: len(m.Excluded.Uncertain)},
		{title: "Excluded: in flight (a live lease)", header: exclusionHeader,
			rows: exclusionRows(m.Excluded.InFlight), total: len(m.Excluded.InFlight)},
		{title: "Excluded: evidence expired (the consumer's look-up decides, never replay blindly)", header: exclusionHeader,
			rows: exclusionRows(m.Excluded.EvidenceExpired), total: len(m.Excluded.EvidenceExpired)},
		{title: "Excluded: conflicting payloads", header: []string{"EVENT ID", "WHERE", "PAYLOAD HASHES"},
			rows: conflictRows(m.Excluded.Conflicts), total: len(m.Excluded.Conflicts)},
		{title: "Excluded: already completed (a DLQ replay never repeats what is done)", header: []string{"EVENT ID", "VERSION", "COMPLETED BY"},
			rows: completedRows(m.Excluded.AlreadyCompleted), total: len(m.Excluded.AlreadyCompleted)},
		{title: "Excluded: targets of jobs that have not finished", header: []string{"EVENT ID", "JOB", "JOB STATUS"},
			rows: otherJobRows(m.Excluded.InOtherJob), total: len(m.Excluded.InOtherJob)},
		{title: "Excluded: never completed (nothing to backfill)", header: []string{"EVENT ID"},
			rows: eventIDRows(m.Excluded.NotProcessed), total: len(m.Excluded.NotProcessed)},
		unusableSection(m),
		{title: "Event IDs", header: []string{"EVENT ID"}, rows: eventIDRows(m.EventIDs), total: len(m.EventIDs)},
	}
	if l := m.EvidenceLookup; l != nil {
		// After the evidence-expired section: what the look-up said about those events and the rest.
		at := slices.IndexFunc(sections, func(s summarySection) bool { return strings.HasPrefix(s.title, "Excluded: evidence expired") }) + 1
		sections = slices.Insert(sections, at, summarySection{title: lookupTitle(l), header: []string{"EVENT ID", "VERDICT", "OUTCOME"},
			rows: lookupRows(l.Events), total: len(l.Events)})
	}
	for i, s := range sections {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if len(s.rows) == 0 {
			fmt.Fprintf(w, "%s: none\n", s.title)
			continue
		}
		fmt.Fprintln(w, s.title)
		t := cmdutil.NewTable(w, isTTY)
		if s.header != nil {
			t.Header(s.header)
		}
		if err := t.Bulk(s.rows); err != nil {
			return fmt.Errorf("show: %w", err)
		}
		if err := t.Render(); err != nil {
			return fmt.Errorf("show: %w", err)
		}
		if more := s.total - len(s.rows); more > 0 {
			fmt.Fprintf(w, "... %d more\n", more)
		}
	}
	return nil
}

func jobRows(m *manifest.Manifest, isTTY bool) [][]string {
	src := &m.Source
	est := &m.ExternalCallsEstimate
	rows := [][]string{
		{"job", m.ID},
		{"consumer", m.Consumer},
		{"reason", m.Reason},
		{"ticket", orDash(m.Ticket)},
		{"created by", m.CreatedBy},
		{"created at", formatTime(&m.CreatedAt, "-")},
		{"digest", digestCell(m.Digest, isTTY)},
		{"source", sourceDescription(m)},
		{"stream", src.Stream},
		{"subject filter", orDash(src.SubjectFilter)},
		{"time range", formatTime(src.Since, "stream start") + " to " + formatTime(src.Until, "plan time")},
		{"failure match", orDash(src.FailureMatch)},
		{"max targets", formatMax(src.Max)},
		{"selection", SelectionText(src.Selection)},
		{"replays to", replaysTo(src.ToSubject)},
		{"stripped headers", orDash(strings.Join(src.StripHeaders, ", "))},
		{"seq range", fmt.Sprintf("%d to %d (stream last seq %d at plan)", src.FirstSeq, src.LastSeq, src.StreamLastSeq)},
		{"effect version", fmt.Sprintf("%d -> %d", m.EffectVersion.From, m.EffectVersion.To)},
		{"write forbidden", strconv.FormatBool(m.WriteForbidden)},
		{"expected external calls", strconv.FormatInt(m.ExpectedExternalCalls, 10)},
		{"estimate method", est.Method},
		{"estimate", fmt.Sprintf("%d known targets with %d recorded calls + %d estimated targets at %s calls each (mean of %d effects)",
			est.KnownTargets, est.KnownCalls, est.EstimatedTargets, strconv.FormatFloat(est.MeanPerEffect, 'f', -1, 64), est.SampleSize)},
	}
	return rows
}

// statsRows lists every field of Stats under its JSON name, found by reflection so a figure
// added to the manifest cannot be left out of the review. FailureReasons has its own table.
func statsRows(st *manifest.Stats) [][]string {
	v := reflect.ValueOf(st).Elem()
	var rows [][]string
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		switch f := v.Field(i); f.Kind() {
		case reflect.Int64:
			rows = append(rows, []string{name, strconv.FormatInt(f.Int(), 10)})
		case reflect.Float64:
			rows = append(rows, []string{name, fmt.Sprintf("%.4f (%.1f%%)", f.Float(), f.Float()*100)})
		}
	}
	return rows
}

// strataSection is the targets' histogram: a DLQ's failure reasons, a backfill's previous
// outcomes (what the shadow sample is stratified by).
func strataSection(m *manifest.Manifest) summarySection {
	// Grouped as inspect groups them: reasons that carry numbers, hosts or IDs are one row; the
	// manifest keeps each target's own reason.
	strata, _ := dlq.Strata(m)
	s := summarySection{title: "Failure groups of the targets", header: []string{"FAILURE GROUP", "TARGETS"}, rows: cmdutil.ReasonRows(strata)}
	if m.SourceKind() == manifest.SourceBackfill {
		s.title, s.header = "Previous outcomes of the targets", []string{"OUTCOME", "TARGETS"}
	}
	return s
}

func sourceDescription(m *manifest.Manifest) string {
	if m.SourceKind() == manifest.SourceBackfill {
		return "backfill: originals replayed to their own subjects; targets completed under an older version"
	}
	return "dlq: dead-lettered messages replayed to their original subject; targets never completed"
}

func completedRows(xs []manifest.CompletedExclusion) [][]string {
	xs = xs[:min(len(xs), showMaxExcluded)]
	rows := make([][]string, len(xs))
	for i, x := range xs {
		rows[i] = []string{x.EventID, strconv.Itoa(x.EffectVersion), cmp.Or(x.JobID, "live")}
	}
	return rows
}

func otherJobRows(xs []manifest.JobExclusion) [][]string {
	xs = xs[:min(len(xs), showMaxExcluded)]
	rows := make([][]string, len(xs))
	for i, x := range xs {
		rows[i] = []string{x.EventID, x.JobID, x.JobStatus}
	}
	return rows
}

var exclusionHeader = []string{"EVENT ID", "VERSION", "STATE", "LEASE OWNER", "LEASE EXPIRES"}

// lookupTitle heads plan's look-ups on expired evidence with what they did, in counts.
func lookupTitle(l *manifest.EvidenceLookup) string {
	t := fmt.Sprintf("Look-up on expired evidence: %d asked, %d recorded reconciled, %d made targets, %d still kept out (review by hand)",
		l.Asked, l.Reconciled, l.Targets, l.KeptOut)
	if l.Stopped != "" {
		t += "; stopped: " + clip.Line(l.Stopped)
	}
	return t
}

func lookupRows(xs []manifest.LookupOutcome) [][]string {
	xs = xs[:min(len(xs), showMaxExcluded)]
	rows := make([][]string, len(xs))
	for i, x := range xs {
		rows[i] = []string{x.EventID, orDash(x.Verdict), x.Outcome}
	}
	return rows
}

func exclusionRows(xs []manifest.LedgerExclusion) [][]string {
	xs = xs[:min(len(xs), showMaxExcluded)]
	rows := make([][]string, len(xs))
	for i, x := range xs {
		rows[i] = []string{x.EventID, strconv.Itoa(x.EffectVersion), x.State, orDash(x.LeaseOwner), formatTime(x.LeaseExpiresAt, "-")}
	}
	return rows
}

func conflictRows(cs []manifest.Conflict) [][]string {
	cs = cs[:min(len(cs), showMaxExcluded)]
	rows := make([][]string, len(cs))
	for i, c := range cs {
		rows[i] = []string{c.EventID, c.Where, strings.Join(c.PayloadHashes, ", ")}
	}
	return rows
}

func seqRows(seqs []uint64) [][]string {
	seqs = seqs[:min(len(seqs), showMaxExcluded)]
	rows := make([][]string, len(seqs))
	for i, seq := range seqs {
		rows[i] = []string{strconv.FormatUint(seq, 10)}
	}
	return rows
}

func eventIDRows(ids []string) [][]string {
	ids = ids[:min(len(ids), showMaxEventIDs)]
	rows := make([][]string, len(ids))
	for i, id := range ids {
		rows[i] = []string{id}
	}
	return rows
}

func formatTime(t *time.Time, absent string) string {
	if t == nil || t.IsZero() {
		return absent
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func formatMax(n int) string {
	if n == 0 {
		return "no limit"
	}
	return strconv.Itoa(n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// replaysTo says where the targets replay.
func replaysTo(subject string) string {
	if subject == "" {
		return "each message's original subject"
	}
	return subject + " (--to-subject, for every target)"
}

// SelectionText is how the operator picked the events (plan's selection flags), one line.
func SelectionText(sel *manifest.Selection) string {
	if sel == nil {
		return "-"
	}
	var parts []string
	for _, l := range []struct {
		flag string
		list *manifest.IDList
	}{{"--ids-from", sel.IDs}, {"--exclude-ids-from", sel.ExcludeIDs}} {
		if l.list != nil {
			part := fmt.Sprintf("%s %s (%d IDs, %s)", l.flag, l.list.From, l.list.Count, l.list.Digest)
			if l.list.NotFound > 0 {
				part += fmt.Sprintf(", %d not in the stream: %s", l.list.NotFound, strings.Join(l.list.NotFoundIDs, " "))
			}
			parts = append(parts, part)
		}
	}
	if sel.FailureGroup != "" {
		parts = append(parts, fmt.Sprintf("--failure-group %q", sel.FailureGroup))
	}
	if sel.Where != "" {
		parts = append(parts, fmt.Sprintf("--where %q", sel.Where))
	}
	return strings.Join(parts, "; ")
}

// digestCell is the digest as a table cell: on a terminal split in two at its middle, so the
// 71-character word fits an 80-column table (--json and a pipe get it whole).
func digestCell(digest string, isTTY bool) string {
	if !isTTY || len(digest) < 40 {
		return digest
	}
	half := len(manifest.DigestPrefix) + (len(digest)-len(manifest.DigestPrefix))/2
	return digest[:half] + " " + digest[half:]
}

// unusableSection lists the messages plan could not make targets of, each with why when the
// manifest says (manifests planned before it list the sequences alone).
func unusableSection(m *manifest.Manifest) summarySection {
	x := m.Excluded
	sec := summarySection{title: "Excluded: messages without a usable Event-Id or original subject", header: []string{"STREAM SEQ"},
		rows: seqRows(x.MissingEventIDSeqs), total: len(x.MissingEventIDSeqs)}
	if len(x.Unusable) == 0 {
		return sec
	}
	sec.header = []string{"STREAM SEQ", "WHY"}
	sec.rows = nil
	for _, u := range x.Unusable[:min(len(x.Unusable), showMaxExcluded)] {
		sec.rows = append(sec.rows, []string{strconv.FormatUint(u.Seq, 10), u.Why})
	}
	return sec
}
