package ledger_test

import (
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// Each instance's share of a job, through the SDK's own statements: the completion clears the
// lease owner, and the trigger of migration 0022 keeps it as completed_by.
func TestEffectsJobOwnersGivesEachInstanceItsShare(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	lease := func(id, owner string, d time.Duration) ledger.EffectKey {
		t.Helper()
		key := ledger.EffectKey{Consumer: "billing", EventID: id, EffectVersion: 2}
		ok, err := ledger.EffectsClaim(ctx, store.Pool(), ledger.EffectClaim{Key: key, RequestHash: "sha256:" + id,
			RequestHashAlg: "canonical-json-v1", Owner: owner, Lease: d, JobID: "job-o"})
		if err != nil || !ok {
			t.Fatalf("claim %s for %s: %t %v", id, owner, ok, err)
		}
		return key
	}
	complete := func(key ledger.EffectKey, owner, kind string) {
		t.Helper()
		ok, err := ledger.EffectsComplete(ctx, store.Pool(), ledger.EffectCompletion{Key: key, Owner: owner, ResultHash: "sha256:r",
			ResultBody: []byte(`{}`), OutcomeKind: kind, ExternalRefs: []byte(`[]`), ResultRetention: time.Hour, EvidenceRetention: time.Hour})
		if err != nil || !ok {
			t.Fatalf("complete %s for %s: %t %v", key.EventID, owner, ok, err)
		}
	}
	complete(lease("a1", "host-a", time.Minute), "host-a", "")
	complete(lease("a2", "host-a", time.Minute), "host-a", "business")
	lease("a3", "host-a", time.Minute)
	complete(lease("b1", "host-b", time.Minute), "host-b", "")
	lease("b2", "host-b", time.Millisecond) // lapses: host-b died holding it
	uncertain := lease("b3", "host-b", time.Minute)
	if ok, err := ledger.EffectsMarkUncertain(ctx, store.Pool(), ledger.EffectUncertainty{Key: uncertain, Owner: "host-b", ExternalRefs: []byte(`[]`), LastError: "timeout"}); err != nil || !ok {
		t.Fatalf("mark uncertain: %t %v", ok, err)
	}
	released := lease("c1", "host-c", time.Minute)
	if ok, err := ledger.EffectsRelease(ctx, store.Pool(), released, "host-c", "broker unavailable"); err != nil || !ok {
		t.Fatalf("release: %t %v", ok, err)
	}
	// Another job's row and a row completed before migration 0022 (no completed_by).
	complete(lease("x1", "host-a", time.Minute), "host-a", "")
	execSQL(t, store, `update effects set job_id = 'job-other' where event_id = 'x1'`)
	complete(lease("old", "host-old", time.Minute), "host-old", "")
	execSQL(t, store, `update effects set completed_by = null where event_id = 'old'`)
	execSQL(t, store, `update effects set heartbeat_at = now() - interval '90 seconds' where event_id = 'b2'`)

	got, err := store.EffectsJobOwners(ctx, "billing", 2, "job-o")
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.OwnerShare{
		{Owner: "", Completed: 1},
		{Owner: "host-a", Completed: 2, InProgress: 1},
		{Owner: "host-b", Completed: 1, Uncertain: 1, Lapsed: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("shares %+v, want %+v", got, want)
	}
	for i := range want {
		age := got[i].OldestLeaseSeconds
		got[i].OldestLeaseSeconds = 0
		if got[i] != want[i] {
			t.Errorf("share %d: %+v, want %+v", i, got[i], want[i])
		}
		switch got[i].Owner {
		case "host-a":
			if age < 0 || age > 30 {
				t.Errorf("host-a's live lease is %.1f s old", age)
			}
		case "host-b":
			if age < 89 || age > 120 {
				t.Errorf("host-b's oldest lease is %.1f s old, want about 90", age)
			}
		}
	}
	if none, err := store.EffectsJobOwners(ctx, "billing", 2, "job-none"); err != nil || len(none) != 0 {
		t.Fatalf("a job without rows: %+v, %v", none, err)
	}
}
