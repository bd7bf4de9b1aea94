package keys_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/keys"
	"github.com/replayctl/replayctl/ledger"
)

var secret = []byte("a test secret of the service")

const route = "POST /v1/charges"

// storeWithRecord is a ledger holding one record of key abc on route, whose policy registered.
func storeWithRecord(t *testing.T) *ledger.Store {
	t.Helper()
	store := pgtest.Ledger(t)
	if err := store.RetentionPoliciesRegister(t.Context(), []apikey.Policy{{Kind: apikey.PolicyRoute, Name: route,
		Delays: apikey.Delays{ClientRetry: time.Hour}, ReplayWindow: time.Hour, EvidenceWindow: 2 * time.Hour, RegisteredBy: "test"}}); err != nil {
		t.Fatal(err)
	}
	_, _, err := store.APIKeysClaim(t.Context(), apikey.Claim{ScopeHash: apikey.ScopeHash("t", "p", route), KeyHash: apikey.HashKey(secret, "abc"),
		Route: route, ClientHash: apikey.ClientHash("t", "p"), RequestHash: "sha256:00", RequestHashAlg: "sha256-canon-v2", Owner: "o1", Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

func TestPruneAndPolicyRefuseAnUnknownRouteWithTheKnownOnes(t *testing.T) {
	store := storeWithRecord(t)
	_, err := keys.Prune(t.Context(), store, keys.PruneRequest{Options: ledger.APIKeysPruneOptions{Route: "POST /v1/charge", DryRun: true}})
	if !errors.Is(err, keys.ErrUnknownRoute) || !strings.Contains(err.Error(), `did you mean POST /v1/charges?`) {
		t.Errorf("prune --route with a typo: %v", err)
	}
	_, err = keys.Policies(t.Context(), store, apikey.PolicyRoute, "nope")
	if !errors.Is(err, keys.ErrUnknownRoute) || !strings.Contains(err.Error(), "registered: POST /v1/charges") {
		t.Errorf("policy --route nope: %v", err)
	}
	if _, err := keys.Stats(t.Context(), store, time.Now().Add(-time.Hour), time.Now(), "nope"); !errors.Is(err, keys.ErrUnknownRoute) {
		t.Errorf("stats --route nope: %v", err)
	}
	if _, err := keys.Uncertain(t.Context(), store, "nope", 10); !errors.Is(err, keys.ErrUnknownRoute) {
		t.Errorf("uncertain --route nope: %v", err)
	}
	if _, err := keys.Prune(t.Context(), store, keys.PruneRequest{Options: ledger.APIKeysPruneOptions{Route: route, DryRun: true}}); err != nil {
		t.Errorf("prune of a registered route: %v", err)
	}
}
