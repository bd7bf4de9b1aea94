package ledgerconformance

import (
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/keys"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

// APIRecordsSeeder writes what keys.Records only reads, and reads back the audit entries it
// writes beside the records.
type APIRecordsSeeder interface {
	AddAPIKeys(records ...ledgertest.APIKey)
	AuditActions() []string
}

// APIRecords checks keys.Records: open returns an empty store of its own for each subtest, the
// seeder that writes into it, and how to register policies in it.
func APIRecords(t *testing.T, open func(t *testing.T) (keys.Records, APIRecordsSeeder, func([]apikey.Policy) error)) {
	const charges, refunds = "POST /v1/charges", "POST /v1/refunds"
	key := func(name string) string { return apikey.HashKey([]byte("secret"), name) }
	t.Run("a key's records are every scope's, by route then scope, a route keeping its own", func(t *testing.T) {
		store, seed, _ := open(t)
		seed.AddAPIKeys(
			ledgertest.APIKey{KeyHash: key("k1"), Route: refunds},
			ledgertest.APIKey{KeyHash: key("k1"), Route: charges, ScopeHash: apikey.ScopeHash("t2", "p", charges), State: "completed"},
			ledgertest.APIKey{KeyHash: key("k1"), Route: charges, ScopeHash: apikey.ScopeHash("t1", "p", charges), LeaseLapsedAgo: time.Second},
			ledgertest.APIKey{KeyHash: key("k2"), Route: charges})
		recs, err := store.APIKeysOfKey(t.Context(), key("k1"), "")
		if err != nil || len(recs) != 3 {
			t.Fatalf("%d records, %v; want k1's three", len(recs), err)
		}
		if recs[0].Route != charges || recs[1].Route != charges || recs[2].Route != refunds || recs[0].ScopeHash > recs[1].ScopeHash {
			t.Errorf("order %s %s, %s %s, %s; want by route then scope", recs[0].Route, recs[0].ScopeHash, recs[1].Route, recs[1].ScopeHash, recs[2].Route)
		}
		for _, r := range recs {
			live := r.State == apikey.StateProcessing && r.Route == refunds
			if r.KeyHash != key("k1") || r.LeaseLive != live || (r.LeaseRemaining > 0) != live || r.LeaseRemaining > time.Minute ||
				r.RequestHash != "sha256:"+key("k1") || r.ClientHash != apikey.ClientHash("t", "p") || r.ReplayOpen {
				t.Errorf("record %+v; lease live %v", r, live)
			}
		}
		only, err := store.APIKeysOfKey(t.Context(), key("k1"), refunds)
		if err != nil || len(only) != 1 || only[0].Route != refunds {
			t.Errorf("refunds only: %+v, %v", only, err)
		}
		if none, err := store.APIKeysOfKey(t.Context(), key("k3"), ""); err != nil || len(none) != 0 {
			t.Errorf("an unknown key: %+v, %v", none, err)
		}
	})
	t.Run("records awaiting a decision are the uncertain and the lapsed after a call, oldest first", func(t *testing.T) {
		store, seed, _ := open(t)
		seed.AddAPIKeys(
			ledgertest.APIKey{KeyHash: key("newer"), State: "uncertain", CallsStarted: 1, UpdatedAgo: time.Minute},
			ledgertest.APIKey{KeyHash: key("older"), State: "uncertain", CallsStarted: 1, UpdatedAgo: time.Hour},
			ledgertest.APIKey{KeyHash: key("lapsed"), CallsStarted: 1, LeaseLapsedAgo: time.Second, UpdatedAgo: 10 * time.Minute},
			ledgertest.APIKey{KeyHash: key("lapsed-before-a-call"), LeaseLapsedAgo: time.Second},
			ledgertest.APIKey{KeyHash: key("live"), CallsStarted: 1},
			ledgertest.APIKey{KeyHash: key("done"), State: "completed", CallsStarted: 1},
			ledgertest.APIKey{KeyHash: key("refund"), Route: refunds, State: "uncertain", CallsStarted: 1})
		recs, err := store.APIKeysUncertain(t.Context(), charges, 10)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := hashesOf(recs), key("older")+" "+key("lapsed")+" "+key("newer"); got != want {
			t.Errorf("awaiting a decision on charges: %s, want %s", got, want)
		}
		if all, err := store.APIKeysUncertain(t.Context(), "", 10); err != nil || len(all) != 4 {
			t.Errorf("every route: %d, %v; want 4", len(all), err)
		}
		if two, err := store.APIKeysUncertain(t.Context(), "", 2); err != nil || hashesOf(two) != key("older")+" "+key("lapsed") {
			t.Errorf("limit 2: %s, %v", hashesOf(two), err)
		}
	})
	t.Run("a resolution settles a record awaiting a decision once, with its audit entry", func(t *testing.T) {
		store, seed, _ := open(t)
		seed.AddAPIKeys(
			ledgertest.APIKey{KeyHash: key("uncertain"), State: "uncertain", CallsStarted: 1, ExternalRef: "ch_1"},
			ledgertest.APIKey{KeyHash: key("lapsed"), CallsStarted: 1, LeaseLapsedAgo: time.Second},
			ledgertest.APIKey{KeyHash: key("done"), State: "completed", CallsStarted: 1})
		audit := ledger.AuditEntry{Actor: "alice", Action: "keys.resolved"}
		settle := func(name string, as apikey.Resolution, ref string) bool {
			t.Helper()
			ok, err := store.APIKeysResolve(t.Context(), apikey.Settlement{Key: apikey.Key{ScopeHash: apikey.ScopeHash("t", "p", charges),
				KeyHash: key(name)}, Resolution: as, ExternalRef: ref, Note: "checked the dashboard", EvidenceWindow: 2 * time.Hour}, audit)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		before := time.Now().Add(-time.Second)
		if !settle("uncertain", apikey.ResolutionHappened, "") || !settle("lapsed", apikey.ResolutionNotHappened, "ch_none") {
			t.Fatal("a record awaiting a decision was not settled")
		}
		if settle("uncertain", apikey.ResolutionNotHappened, "") || settle("done", apikey.ResolutionHappened, "") || settle("nobody", apikey.ResolutionHappened, "") {
			t.Error("a record not awaiting a decision (settled, completed, absent) was settled")
		}
		recs, err := store.APIKeysOfKey(t.Context(), key("uncertain"), "")
		if err != nil || len(recs) != 1 {
			t.Fatalf("%+v, %v", recs, err)
		}
		r := recs[0]
		if r.State != apikey.StateReconciled || r.Resolution != apikey.ResolutionHappened || r.ExternalRef != "ch_1" ||
			r.Note != "checked the dashboard" || r.LeaseLive || r.EvidenceUntil == nil || r.ReplayUntil == nil || r.ReplayOpen ||
			r.UpdatedAt.Before(before) {
			t.Fatalf("settled record %+v", r)
		}
		if left := r.EvidenceUntil.Sub(*r.ReplayUntil); left < 2*time.Hour-time.Second || left > 2*time.Hour+time.Second {
			t.Errorf("evidence until %v, replay until %v; want the evidence window from the settlement", r.EvidenceUntil, r.ReplayUntil)
		}
		lapsed, err := store.APIKeysOfKey(t.Context(), key("lapsed"), "")
		if err != nil || len(lapsed) != 1 || lapsed[0].Resolution != apikey.ResolutionNotHappened || lapsed[0].ExternalRef != "ch_none" {
			t.Errorf("settled lapsed record %+v, %v", lapsed, err)
		}
		var resolved int
		for _, a := range seed.AuditActions() {
			if a == "keys.resolved" {
				resolved++
			}
		}
		if resolved != 2 {
			t.Errorf("%d keys.resolved entries, want one per record settled", resolved)
		}
	})
	t.Run("policies read back by kind and name", func(t *testing.T) {
		store, _, register := open(t)
		if err := register([]apikey.Policy{
			{Kind: apikey.PolicyRoute, Name: refunds, ReplayWindow: time.Hour, EvidenceWindow: 2 * time.Hour, Irreversible: true, RegisteredBy: "api"},
			{Kind: apikey.PolicyRoute, Name: charges, ReplayWindow: time.Hour, EvidenceWindow: 3 * time.Hour, RegisteredBy: "api"},
			{Kind: apikey.PolicyConsumer, Name: "billing", ReplayWindow: time.Hour, EvidenceWindow: 4 * time.Hour, RegisteredBy: "sdk"},
		}); err != nil {
			t.Fatal(err)
		}
		routes, err := store.RetentionPoliciesList(t.Context(), apikey.PolicyRoute, "")
		if err != nil || len(routes) != 2 || routes[0].Name != charges || routes[1].Name != refunds || !routes[1].Irreversible ||
			routes[0].EvidenceWindow != 3*time.Hour || routes[0].RegisteredAt.IsZero() {
			t.Fatalf("routes %+v, %v", routes, err)
		}
		one, err := store.RetentionPoliciesList(t.Context(), "", "billing")
		if err != nil || len(one) != 1 || one[0].Kind != apikey.PolicyConsumer || one[0].EvidenceWindow != 4*time.Hour {
			t.Fatalf("billing %+v, %v", one, err)
		}
		if none, err := store.RetentionPoliciesList(t.Context(), apikey.PolicyRoute, "billing"); err != nil || len(none) != 0 {
			t.Errorf("a consumer's name as a route: %+v, %v", none, err)
		}
	})
}

func hashesOf(recs []apikey.Record) string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.KeyHash
	}
	return strings.Join(out, " ")
}
