package ledger_test

import (
	"testing"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// expiredAPIRecords inserts n expired records of route whose evidence ended evidenceAgo ago.
const expiredAPIRecords = `
insert into api_keys (scope_hash, key_hash, route, client_hash, request_hash, request_hash_alg, state, evidence_until, updated_at)
select $1 || '-scope-' || i, $1 || '-key-' || i, $2, 'client', 'hash', 'canonical-json-v1', 'expired',
       now() - $4::bigint * interval '1 millisecond', now()
  from generate_series(1, $3::int) i`

// keys prune --compact-after: a dry run counts each step as the run then does it; the whole rows
// stay until their mark is an hour old; each route's compact tombstones leave at its own
// retention, a route without one at the default.
func TestKeysPruneCompactsInTwoStepsAndKeepsEachRoutesRetention(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	db := pgtest.Pool(t, store)
	ctx := t.Context()
	day := 24 * time.Hour
	for _, r := range []struct {
		prefix, route string
		n             int
		ago           time.Duration
	}{
		{"charges-old", "POST /v1/charges", 3, 40 * day},
		{"charges-new", "POST /v1/charges", 2, 2 * day}, // within the compaction age: left whole
		{"refunds-old", "POST /v1/refunds", 4, 20 * day},
	} {
		if _, err := db.Exec(ctx, expiredAPIRecords, r.prefix, r.route, r.n, r.ago.Milliseconds()); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.RetentionPoliciesRegister(ctx, []apikey.Policy{{Kind: apikey.PolicyRoute, Name: "POST /v1/refunds",
		ReplayWindow: day, EvidenceWindow: 2 * day, TombstoneWindow: 30 * day, RegisteredBy: "test"}}); err != nil {
		t.Fatal(err)
	}
	opts := ledger.APIKeysPruneOptions{CompactAfter: 7 * day, Actor: "test"}
	prune := func(o ledger.APIKeysPruneOptions) *ledger.APIKeysPruneReport {
		t.Helper()
		r, err := store.APIKeysPrune(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	dry := opts
	dry.DryRun = true
	if r := prune(dry); r.Compacted != 7 || r.WholeRowsDropped != 0 || r.Rows != 0 {
		t.Fatalf("dry run: %+v, want 7 to compact", r)
	}
	if r := prune(opts); r.Compacted != 7 || r.WholeRowsDropped != 0 {
		t.Fatalf("first prune: %+v", r)
	}
	if r := prune(opts); r.Compacted != 0 || r.WholeRowsDropped != 0 {
		t.Fatalf("a second prune within the hour: %+v (the whole rows must wait for the grace)", r)
	}
	if _, err := db.Exec(ctx, `update api_keys set updated_at = updated_at - interval '2 hours' where note is not null`); err != nil {
		t.Fatal(err)
	}
	if r := prune(dry); r.WholeRowsDropped != 7 {
		t.Fatalf("dry run past the grace: %+v", r)
	}
	if r := prune(opts); r.WholeRowsDropped != 7 {
		t.Fatalf("prune past the grace: %+v", r)
	}
	var whole, compact int
	if err := db.QueryRow(ctx, `select (select count(*) from api_keys), (select count(*) from api_key_tombstones)`).Scan(&whole, &compact); err != nil {
		t.Fatal(err)
	}
	if whole != 2 || compact != 7 {
		t.Fatalf("%d whole and %d compact tombstones, want the 2 recent whole and 7 compact", whole, compact)
	}
	// Refunds' evidence ended 20 days ago: within the 30 days it registered, past 10.
	if r := prune(opts); r.Rows != 0 {
		t.Fatalf("prune within the routes' retention: %+v", r)
	}
	if err := store.RetentionPoliciesRegister(ctx, []apikey.Policy{{Kind: apikey.PolicyRoute, Name: "POST /v1/refunds",
		ReplayWindow: day, EvidenceWindow: 2 * day, TombstoneWindow: 10 * day, RegisteredBy: "test"}}); err != nil {
		t.Fatal(err)
	}
	if r := prune(opts); r.Rows != 4 {
		t.Fatalf("prune at refunds' new retention: %+v, want its 4 compact tombstones deleted and none of charges'", r)
	}
	// --tombstone-retention for every route, one route at a time.
	one := opts
	one.Route, one.TombstoneRetention = "POST /v1/charges", 35*day
	if r := prune(one); r.Rows != 3 {
		t.Fatalf("charges at 35 days: %+v", r)
	}
	if err := db.QueryRow(ctx, `select count(*) from api_key_tombstones`).Scan(&compact); err != nil || compact != 0 {
		t.Fatalf("%d compact tombstones left (%v)", compact, err)
	}
}
