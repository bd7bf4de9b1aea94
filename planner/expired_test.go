package planner_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/planner"
)

// An event whose ledger evidence expired is never a target on the plan's word (issue 15): a
// tombstone, or no row for a message older than the evidence window, is counted and listed.
func TestPlanKeepsEventsWithExpiredEvidenceOutOfTheTargets(t *testing.T) {
	t.Parallel()
	for _, compact := range []bool{false, true} {
		name := "whole tombstones"
		if compact {
			name = "compact tombstones"
		}
		t.Run(name, func(t *testing.T) { planKeepsExpiredEvidenceOut(t, compact) })
	}
}

func planKeepsExpiredEvidenceOut(t *testing.T, compact bool) {
	f := newFixture(t)
	f.dlq("dlq.billing", "old-no-row", "timeout", `{"n":4}`)
	// The window is wide enough that the messages published after the sleep stay young on a loaded machine.
	time.Sleep(3 * time.Second)
	f.dlq("dlq.billing", "tombstone", "timeout", `{"n":1}`)
	f.dlq("dlq.billing", "tombstone-and-done", "timeout", `{"n":2}`)
	f.dlq("dlq.billing", "new", "timeout", `{"n":3}`)
	f.effect("tombstone", "completed", `{"n":1}`, 1, nil)
	f.effect("tombstone-and-done", "completed", `{"n":2}`, 1, nil)
	ledgertest.MakeTombstones(t, f.db, "tombstone", "tombstone-and-done")
	if compact {
		// Past prune's compaction age (before the version below exists: its window is open).
		ledgertest.EndWindows(t, f.db, 0, 10*24*time.Hour, "tombstone", "tombstone-and-done")
	}
	// A later completion under another version settles the event whatever the tombstone says.
	if _, err := f.db.Exec(f.ctx, `insert into effects (consumer, event_id, effect_version, state, request_hash, request_hash_alg)
select consumer, event_id, 2, 'completed', request_hash, request_hash_alg from effects where event_id = 'tombstone-and-done'`); err != nil {
		t.Fatal(err)
	}

	if compact {
		// Past prune's compaction age, the tombstones leave effects for their compact form.
		if r, err := f.store.Prune(f.ctx, ledger.PruneOptions{Consumer: "billing", Actor: "test", CompactAfter: ledger.SuggestedCompactAfter}); err != nil || r.Total.Compacted != 2 {
			t.Fatalf("prune %+v, %v: want both tombstones compacted", r, err)
		}
	}

	res, err := planner.Plan(f.ctx, f.js, f.store, f.options(func(o *planner.Options) { o.EvidenceWindow = 2 * time.Second }))
	if err != nil {
		t.Fatal(err)
	}
	m := res.Manifest
	// tombstone-and-done is settled by its later completion: a DLQ replay keeps it out as done
	// (issue 14), where it used to be a target replayed again.
	if m.Stats.EvidenceExpired != 2 || !reflect.DeepEqual(m.EventIDs, []string{"new"}) || m.Stats.AlreadyCompleted != 1 {
		t.Fatalf("evidenceExpired %d, targets %v, already completed %d; want 2 kept out, target new, tombstone-and-done done",
			m.Stats.EvidenceExpired, m.EventIDs, m.Stats.AlreadyCompleted)
	}
	want := []manifest.LedgerExclusion{{EventID: "old-no-row", State: "absent"}, {EventID: "tombstone", EffectVersion: 1, State: "expired"}}
	if !reflect.DeepEqual(m.Excluded.EvidenceExpired, want) {
		t.Errorf("excluded.evidenceExpired %+v, want %+v", m.Excluded.EvidenceExpired, want)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "2 event IDs have expired ledger evidence") {
		t.Errorf("warnings %q lack the expired evidence", res.Warnings)
	}
	if _, err := manifest.Load(f.options(nil).OutputPath); err != nil {
		t.Errorf("the manifest does not read back: %v", err)
	}
}

// Plan judges old events by the EvidenceRetention the consumer's SDK registered (issue 30), and
// a --evidence-window that differs wins with a warning.
func TestPlanReadsTheConsumersRegisteredEvidenceRetention(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.dlq("dlq.billing", "old-no-row", "timeout", `{"n":4}`)
	time.Sleep(1500 * time.Millisecond)
	f.dlq("dlq.billing", "new", "timeout", `{"n":3}`)
	if err := f.store.RetentionPoliciesRegister(f.ctx, []apikey.Policy{{Kind: apikey.PolicyConsumer, Name: "billing",
		ReplayWindow: time.Second, EvidenceWindow: time.Second, RegisteredBy: "test"}}); err != nil {
		t.Fatal(err)
	}
	res, err := planner.Plan(f.ctx, f.js, f.store, f.options(nil))
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Manifest; m.Stats.EvidenceExpired != 1 || !reflect.DeepEqual(m.EventIDs, []string{"new"}) {
		t.Fatalf("under the registered 1 s window: evidenceExpired %d, targets %v; want old-no-row kept out", m.Stats.EvidenceExpired, m.EventIDs)
	}
	if strings.Contains(strings.Join(res.Warnings, "\n"), "--evidence-window") {
		t.Errorf("a warning about a flag that was not given: %q", res.Warnings)
	}

	g := newFixture(t)
	g.dlq("dlq.billing", "old-no-row", "timeout", `{"n":4}`)
	if err := g.store.RetentionPoliciesRegister(g.ctx, []apikey.Policy{{Kind: apikey.PolicyConsumer, Name: "billing",
		ReplayWindow: time.Second, EvidenceWindow: time.Second, RegisteredBy: "test"}}); err != nil {
		t.Fatal(err)
	}
	res, err = planner.Plan(g.ctx, g.js, g.store, g.options(func(o *planner.Options) { o.EvidenceWindow = time.Hour }))
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifest.Stats.EvidenceExpired != 0 || !strings.Contains(strings.Join(res.Warnings, "\n"), "--evidence-window 1h0m0s differs from the EvidenceRetention 1s") {
		t.Fatalf("the flag overrides with a warning: evidenceExpired %d, warnings %q", res.Manifest.Stats.EvidenceExpired, res.Warnings)
	}
}
