package planner_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/planner"
)

// The plan compares each ledger row with the DLQ payload recomputed under the row's own
// algorithm, from the consumer's registered options: v1 rows and v2 rows are both checked, a row
// under an algorithm it cannot compute is a conflict, and DLQ copies that differ only in an
// excluded field are one intent.
func TestPlanComparesEachRowUnderItsOwnAlgorithm(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	opts := fingerprint.Options{Exclude: []string{"sentAt"}, Sets: []string{"tags"}}
	v2, err := fingerprint.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	// Options whose digest is not the name's: nothing this binary computes may stand for them.
	unreadable := fingerprint.V2Prefix + "deadbeef"
	for alg, o := range map[string]string{unreadable: `{"exclude":[],"sets":[]}`, v2.Algorithm(): opts.Encode()} {
		if err := f.store.FingerprintAlgorithmRegister(f.ctx, "billing", alg, o); err != nil {
			t.Fatal(err)
		}
	}
	row := func(eventID, hash, alg string) ledger.EffectRow {
		return ledger.EffectRow{Consumer: "billing", EventID: eventID, EffectVersion: 1, State: "completed",
			RequestHash: hash, RequestHashAlg: alg, EffectCount: 1}
	}
	v1 := fingerprint.Payload
	f.dlq("dlq.billing", "resent", "timeout", `{"n":1,"sentAt":"02:00","tags":["a","b"]}`)
	f.dlq("dlq.billing", "resent", "timeout", `{"n":1,"sentAt":"02:05","tags":["b","a"]}`)
	f.dlq("dlq.billing", "v1-same", "timeout", `{"n":2,"sentAt":"02:00"}`)
	f.dlq("dlq.billing", "v1-changed", "timeout", `{"n":3,"sentAt":"02:00","changed":true}`)
	f.dlq("dlq.billing", "v2-same", "timeout", `{"n":4,"sentAt":"02:09","tags":["y","x"]}`)
	f.dlq("dlq.billing", "v2-changed", "timeout", `{"n":5,"sentAt":"02:00","tags":["x"]}`)
	f.dlq("dlq.billing", "unknown-alg", "timeout", `{"n":6}`)
	f.dlq("dlq.billing", "source-conflict", "timeout", `{"n":7,"sentAt":"02:00"}`)
	f.dlq("dlq.billing", "source-conflict", "timeout", `{"n":70,"sentAt":"02:00"}`)
	unknown := fingerprint.V2Prefix + "00000000"
	if _, err := f.store.EffectsImport(f.ctx, []ledger.EffectRow{
		row("v1-same", v1([]byte(`{"n":2,"sentAt":"02:00"}`)), fingerprint.Algorithm),
		row("v1-changed", v1([]byte(`{"n":3,"sentAt":"02:00"}`)), fingerprint.Algorithm),
		row("v2-same", v2.Sum([]byte(`{"n":4,"sentAt":"01:00","tags":["x","y"]}`)), v2.Algorithm()),
		row("v2-changed", v2.Sum([]byte(`{"n":5,"sentAt":"02:00","tags":["x","y"]}`)), v2.Algorithm()),
		row("unknown-alg", "sha256:unknowable", unknown),
	}); err != nil {
		t.Fatal(err)
	}

	res, err := planner.Plan(f.ctx, f.js, f.store, f.options(nil))
	if err != nil {
		t.Fatal(err)
	}
	m := res.Manifest
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, unreadable) }) {
		t.Errorf("warnings %q do not name the unreadable algorithm %s", res.Warnings, unreadable)
	}
	// v1-same and v2-same match their completed rows: a DLQ replay keeps them out as done (issue
	// 14); before, they were targets replayed again.
	if got, want := m.EventIDs, []string{"resent"}; !reflect.DeepEqual(got, want) || m.Stats.AlreadyCompleted != 2 {
		t.Fatalf("targets %v, already completed %d; want %v and 2", got, m.Stats.AlreadyCompleted, want)
	}
	if m.Stats.RepeatedInSource != 1 || m.Stats.DuplicateInSource != 1 || m.Stats.LedgerPayloadMismatch != 3 {
		t.Fatalf("stats %+v: want 1 repeated (resent), 1 source conflict, 3 ledger conflicts", m.Stats)
	}
	want := []manifest.Conflict{
		{EventID: "source-conflict", Where: "source", PayloadHashes: sorted(
			v2.Sum([]byte(`{"n":7,"sentAt":"02:00"}`)), v2.Sum([]byte(`{"n":70,"sentAt":"02:00"}`)))},
		{EventID: "unknown-alg", Where: "ledger", PayloadHashes: []string{"not computable: " + unknown, "sha256:unknowable"}},
		{EventID: "v1-changed", Where: "ledger", PayloadHashes: []string{
			v1([]byte(`{"n":3,"sentAt":"02:00","changed":true}`)), v1([]byte(`{"n":3,"sentAt":"02:00"}`))}},
		{EventID: "v2-changed", Where: "ledger", PayloadHashes: []string{
			v2.Sum([]byte(`{"n":5,"sentAt":"02:00","tags":["x"]}`)), v2.Sum([]byte(`{"n":5,"sentAt":"02:00","tags":["x","y"]}`))}},
	}
	if !reflect.DeepEqual(m.Excluded.Conflicts, want) {
		t.Fatalf("conflicts\n got %+v\nwant %+v", m.Excluded.Conflicts, want)
	}
	// The scan leaves payload_hash out when it is the current algorithm's fingerprint; here the
	// current one is not v1, and the target still records its first message's v1 fingerprint.
	var payloadHash string
	if err := f.db.QueryRow(f.ctx, `select payload_hash from job_targets where job_id = $1 and event_id = 'resent'`, m.ID).Scan(&payloadHash); err != nil {
		t.Fatal(err)
	}
	if want := v1([]byte(`{"n":1,"sentAt":"02:00","tags":["a","b"]}`)); payloadHash != want {
		t.Fatalf("payload_hash of resent %s, want %s", payloadHash, want)
	}
}

func sorted(a, b string) []string {
	if a > b {
		return []string{b, a}
	}
	return []string{a, b}
}
