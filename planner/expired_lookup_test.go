package planner_test

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/planner"
	"github.com/replayctl/replayctl/protocol"
)

// Plan asks the consumer's look-up once about each event whose evidence expired (issue 15 item 2):
// happened is recorded reconciled without running anything, not happened becomes the only target,
// unknown stays kept out as evidenceExpired for manual review.
func TestPlanAsksTheLookupAboutExpiredEvidence(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	verdicts := map[string]string{"charged": protocol.VerdictHappened, "never-charged": protocol.VerdictNotHappened,
		"provider-unsure": protocol.VerdictUnknown}
	for id := range verdicts {
		f.dlq("dlq.billing", id, "timeout", `{"order":"`+id+`"}`)
		f.effect(id, "completed", `{"order":"`+id+`"}`, 1, nil)
	}
	ledgertest.MakeTombstones(t, f.db)
	var mu sync.Mutex
	asked := map[string]int{}
	handled := 0
	c, err := consumer.New(consumer.Config{Name: "billing", Store: f.store, Conn: f.js.Conn(),
		Handler: func(context.Context, consumer.Event, *consumer.Effects) (consumer.Result, error) {
			mu.Lock()
			defer mu.Unlock()
			handled++
			return consumer.Result{}, nil
		},
		Lookup: func(_ context.Context, req consumer.LookupRequest) (consumer.LookupResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked[req.EventID]++
			return consumer.LookupResult{Verdict: verdicts[req.EventID], Detail: "provider ledger checked"}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	stop, err := c.ServeLookup(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	res, err := planner.Plan(f.ctx, f.js, f.store, f.options(nil))
	if err != nil {
		t.Fatal(err)
	}
	m := res.Manifest
	if !reflect.DeepEqual(m.EventIDs, []string{"never-charged"}) {
		t.Fatalf("targets %v, want only never-charged (the look-up said it did not happen)", m.EventIDs)
	}
	if m.Stats.EvidenceReconciled != 1 || m.Stats.EvidenceExpired != 1 {
		t.Errorf("evidenceReconciled %d, evidenceExpired %d; want 1 and 1", m.Stats.EvidenceReconciled, m.Stats.EvidenceExpired)
	}
	want := []manifest.LedgerExclusion{{EventID: "provider-unsure", EffectVersion: 1, State: ledger.EffectExpired}}
	if !reflect.DeepEqual(m.Excluded.EvidenceExpired, want) {
		t.Errorf("excluded.evidenceExpired %+v, want %+v", m.Excluded.EvidenceExpired, want)
	}
	wantLookup := &manifest.EvidenceLookup{Asked: 3, Reconciled: 1, Targets: 1, KeptOut: 1, Events: []manifest.LookupOutcome{
		{EventID: "charged", Verdict: protocol.VerdictHappened, Outcome: manifest.LookupReconciled},
		{EventID: "never-charged", Verdict: protocol.VerdictNotHappened, Outcome: manifest.LookupTarget},
		{EventID: "provider-unsure", Verdict: protocol.VerdictUnknown, Outcome: manifest.LookupKeptOut}}}
	if !reflect.DeepEqual(m.EvidenceLookup, wantLookup) {
		t.Errorf("evidenceLookup %+v, want %+v", m.EvidenceLookup, wantLookup)
	}
	mu.Lock()
	if !reflect.DeepEqual(asked, map[string]int{"charged": 1, "never-charged": 1, "provider-unsure": 1}) || handled != 0 {
		t.Errorf("look-ups %v and %d handler runs; want each event asked once and nothing run", asked, handled)
	}
	mu.Unlock()
	for id, state := range map[string]string{"charged": "reconciled", "never-charged": "received", "provider-unsure": "expired"} {
		var got string
		if err := f.db.QueryRow(f.ctx, `select state from effects where event_id = $1`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != state {
			t.Errorf("%s: ledger row %s, want %s", id, got, state)
		}
	}
	var audited int
	if err := f.db.QueryRow(f.ctx, `select count(*) from audit where action = $1`, ledger.AuditEvidenceExpired).Scan(&audited); err != nil {
		t.Fatal(err)
	}
	if audited != 2 {
		t.Errorf("%d evidence audit entries, want 2 (the reconciled verdict and the reopened tombstone)", audited)
	}

}
