package planner

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/manifest"
)

// maxGroupCache bounds the cache of failure reason -> group: reasons repeat, and masking one costs
// four regular expressions.
const maxGroupCache = 10_000

// InspectReport is what a DLQ holds, in the groups an operator triages by, and what a plan of it
// would do: replayctl inspect. Nothing is recorded to make it.
type InspectReport struct {
	Consumer string `json:"consumer"`
	Stream   string `json:"stream"`
	// Scanned and Usable are the messages read and those the plan's filters kept.
	Scanned int64 `json:"scanned"`
	Usable  int64 `json:"usable"`
	// FailureGroups counts the usable messages by failure group (dlq.FailureGroup), largest
	// first, each with an example event ID; Subjects by original subject; Ages by how long ago
	// the DLQ stored them; Attempts by their delivery attempts.
	FailureGroups []GroupCount `json:"failureGroups"`
	Subjects      []Count      `json:"subjects"`
	Ages          []Count      `json:"ages"`
	Attempts      []Count      `json:"attempts"`
	// Ledger is what the ledger says of the same events: a dry run's figures.
	Ledger InspectLedger `json:"ledger"`
	// InOtherJobs names the unfinished jobs whose targets some of the events are.
	InOtherJobs []string `json:"inOtherJobs"`
	Warnings    []string `json:"warnings"`
}

// GroupCount is one failure group.
type GroupCount struct {
	Group          string `json:"group"`
	Messages       int64  `json:"messages"`
	ExampleEventID string `json:"exampleEventId"`
	ExampleReason  string `json:"exampleReason"`
}

// Count is one value and its messages.
type Count struct {
	Value    string `json:"value"`
	Messages int64  `json:"messages"`
}

// InspectLedger is the ledger's view of the inspected events.
type InspectLedger struct {
	WouldBeTargets    int64 `json:"wouldBeTargets"`
	AlreadyCompleted  int64 `json:"alreadyCompleted"`
	Uncertain         int64 `json:"uncertain"`
	InFlight          int64 `json:"inFlight"`
	InOtherJob        int64 `json:"inOtherJob"`
	EvidenceExpired   int64 `json:"evidenceExpired"`
	FailedAfterReplay int64 `json:"failedAfterReplay"`
	Conflicts         int64 `json:"conflicts"`
}

// ageBuckets are the age buckets, youngest first.
var ageBuckets = []struct {
	name  string
	below time.Duration
}{{"under 1h", time.Hour}, {"1h-6h", 6 * time.Hour}, {"6h-24h", 24 * time.Hour}, {"1d-7d", 7 * 24 * time.Hour}, {"over 7d", 0}}

// scanHistograms collects inspect's counts as the scan goes.
type scanHistograms struct {
	now      time.Time
	groups   map[string]*GroupCount
	cache    map[string]string
	subjects map[string]int64
	ages     []int64
	attempts map[string]int64
}

func newScanHistograms(now time.Time) *scanHistograms {
	return &scanHistograms{now: now, groups: map[string]*GroupCount{}, cache: map[string]string{}, subjects: map[string]int64{},
		ages: make([]int64, len(ageBuckets)), attempts: map[string]int64{}}
}

// add counts one usable message.
func (h *scanHistograms) add(eventID, reason, subject, attempts string, storedAt time.Time) {
	group, ok := h.cache[reason]
	if !ok {
		group = dlq.FailureGroup(reason)
		if len(h.cache) < maxGroupCache {
			h.cache[reason] = group
		}
	}
	g := h.groups[group]
	if g == nil {
		g = &GroupCount{Group: group, ExampleEventID: eventID, ExampleReason: reason}
		h.groups[group] = g
	}
	g.Messages++
	h.subjects[subject]++
	if attempts == "" {
		attempts = "unknown"
	}
	h.attempts[attempts]++
	age := h.now.Sub(storedAt)
	for i, b := range ageBuckets {
		if b.below == 0 || age < b.below {
			h.ages[i]++
			break
		}
	}
}

// Inspect scans the DLQ as a plan of opts would, records nothing, and reports what it holds and
// what the ledger says of it. It takes what a dry-run plan takes: one scan, one join.
func Inspect(ctx context.Context, js jetstream.JetStream, store Ledger, opts Options) (*InspectReport, error) {
	opts.DryRun = true
	h := newScanHistograms(opts.Now)
	if h.now.IsZero() {
		h.now = time.Now()
	}
	opts.histograms = h
	res, err := Plan(ctx, js, store, opts)
	if err != nil {
		return nil, err
	}
	m := res.Manifest
	st := m.Stats
	r := &InspectReport{Consumer: m.Consumer, Stream: m.Source.Stream, Scanned: st.Scanned, Usable: sumCounts(h.subjects),
		FailureGroups: sortedGroups(h.groups), Subjects: sortedCounts(h.subjects), Attempts: sortedCounts(h.attempts),
		Ledger: InspectLedger{WouldBeTargets: st.Targets, AlreadyCompleted: st.AlreadyCompleted + st.CompletedUnderOlderVersion,
			Uncertain: st.ExcludedUncertain, InFlight: st.ExcludedInFlight, InOtherJob: st.ExcludedInOtherJob, EvidenceExpired: st.EvidenceExpired,
			FailedAfterReplay: st.FailedAfterReplay, Conflicts: st.DuplicateInSource + st.LedgerPayloadMismatch},
		InOtherJobs: otherJobs(m), Warnings: inspectWarnings(m, res.Warnings)}
	for i, b := range ageBuckets {
		r.Ages = append(r.Ages, Count{Value: b.name, Messages: h.ages[i]})
	}
	return r, nil
}

func sumCounts(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func sortedGroups(groups map[string]*GroupCount) []GroupCount {
	out := make([]GroupCount, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b GroupCount) int {
		return cmp.Or(cmp.Compare(b.Messages, a.Messages), cmp.Compare(a.Group, b.Group))
	})
	return out
}

func sortedCounts(m map[string]int64) []Count {
	out := make([]Count, 0, len(m))
	for v, n := range m {
		out = append(out, Count{Value: v, Messages: n})
	}
	slices.SortFunc(out, func(a, b Count) int {
		return cmp.Or(cmp.Compare(b.Messages, a.Messages), cmp.Compare(a.Value, b.Value))
	})
	return out
}

// otherJobs are the unfinished jobs the manifest lists as holding some of its events.
func otherJobs(m *manifest.Manifest) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, e := range m.Excluded.InOtherJob {
		if !seen[e.JobID] {
			seen[e.JobID] = true
			out = append(out, e.JobID)
		}
	}
	slices.Sort(out)
	return out
}

// otherJobsText names the unfinished jobs holding some of m's events, with their status.
func otherJobsText(m *manifest.Manifest) string {
	status := map[string]string{}
	for _, e := range m.Excluded.InOtherJob {
		status[e.JobID] = e.JobStatus
	}
	parts := make([]string, 0, len(status))
	for _, id := range otherJobs(m) {
		parts = append(parts, id+" "+status[id])
		if len(parts) == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(status)-5))
			break
		}
	}
	return strings.Join(parts, ", ")
}

// inspectWarnings are plan's warnings as inspect can back them: inspect prints no manifest, so a
// pointer into one names the stream sequences instead; and a stream whose messages carry no
// original subject is said not to look like a DLQ.
func inspectWarnings(m *manifest.Manifest, planWarnings []string) []string {
	seqs := m.Excluded.MissingEventIDSeqs
	listed := make([]string, 0, 5)
	for _, s := range seqs[:min(5, len(seqs))] {
		listed = append(listed, strconv.FormatUint(s, 10))
	}
	where := fmt.Sprintf("stream sequences %s", strings.Join(listed, ", "))
	if len(seqs) > len(listed) {
		where += fmt.Sprintf(" and %d more", len(seqs)-len(listed))
	}
	where += fmt.Sprintf(" (`nats stream get %s SEQ` shows one)", m.Source.Stream)
	out := make([]string, 0, len(planWarnings)+1)
	st := m.Stats
	if st.Scanned > 0 && st.MissingOriginalSubject+st.MissingEventID+st.InvalidEventID == st.Scanned {
		out = append(out, fmt.Sprintf("stream %s does not look like a DLQ: none of its %d messages carries both an %s and an %s header; "+
			"is it a source stream (plan --backfill re-processes those), or does its producer name the headers otherwise (--header-event-id, --header-original-subject)?",
			m.Source.Stream, st.Scanned, m.Source.Headers.EventID, m.Source.Headers.OriginalSubject))
	}
	for _, w := range planWarnings {
		out = append(out, strings.Replace(w, "see excluded.missingEventIdSeqs", where, 1))
	}
	return out
}
