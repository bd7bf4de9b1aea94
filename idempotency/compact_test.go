package idempotency_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/idempotency"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

// chargedThenCompacted charges order under key once, then takes its record through keys prune
// --compact-after to its compact tombstone alone: evidence ended ten days ago, a first prune
// writes the compact form, a second one past the grace deletes the whole row.
func (a *api) chargedThenCompacted(key string) {
	a.t.Helper()
	if got := a.post("demo-alice", key, order); got.status != http.StatusCreated {
		a.t.Fatalf("first request with %s: %d %s", key, got.status, got.body)
	}
	ledgertest.EndKeyWindows(a.t, a.pool, 10*24*time.Hour, 10*24*time.Hour, "completed")
	prune := func() *ledger.APIKeysPruneReport {
		r, err := a.store.APIKeysPrune(a.t.Context(), ledger.APIKeysPruneOptions{CompactAfter: 7 * 24 * time.Hour, Actor: "test"})
		if err != nil {
			a.t.Fatal(err)
		}
		return r
	}
	if r := prune(); r.Tombstoned != 1 || r.Compacted != 1 || r.WholeRowsDropped != 0 {
		a.t.Fatalf("first prune: %+v (want the record tombstoned and compacted, its whole row kept for the grace)", r)
	}
	ledgertest.BackdateKeyChanges(a.t, a.pool, 2*time.Hour)
	if r := prune(); r.WholeRowsDropped != 1 || r.Compacted != 0 {
		a.t.Fatalf("prune past the grace: %+v", r)
	}
	if n := a.records(); n != 0 {
		a.t.Fatalf("%d whole records left, want only the compact tombstone", n)
	}
}

func TestAKeyOnlyACompactTombstoneIsLeftOfIsLookedUpNeverRunAsNew(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.chargedThenCompacted("k-compact")
	// The provider still has the charge under the request's operation ID: gone, not charged again,
	// whatever the body (the fingerprint left with the evidence).
	for _, o := range []billing.Order{order, {OrderID: "ord-other", Customer: "c", AmountCents: 1, Currency: "EUR"}} {
		got := a.post("demo-alice", "k-compact", o)
		var p idempotency.Problem
		_ = jsonUnmarshal(got.body, &p)
		if got.status != http.StatusGone || !strings.HasPrefix(p.ExternalRef, "ch_") || a.provider.Calls(billing.EffectCharge) != 1 {
			t.Fatalf("a retry of a compacted key: %d %s, charges %d", got.status, got.body, a.provider.Calls(billing.EffectCharge))
		}
	}
	if n := a.records(); n != 0 {
		t.Fatalf("the look-up's happened verdict wrote %d records", n)
	}
	// Another caller's same key is another record: it runs.
	if got := a.post("demo-bob", "k-compact", billing.Order{OrderID: "ord-bob", Customer: "b", AmountCents: 5, Currency: "EUR"}); got.status != http.StatusCreated {
		t.Fatalf("another scope's key: %d %s", got.status, got.body)
	}
}

func TestACompactedKeyTheProviderNeverChargedRunsOnceAndOneItCannotTellGoesToReview(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.chargedThenCompacted("k-lost")
	// A provider whose look-up cannot tell: review, nothing charged, and the next retry waits too.
	c := newAPI(t, apiOptions{store: a.store, route: func(r *idempotency.Route) {
		r.Lookup = func(_ contextT, _ idempotency.LookupRequest) (idempotency.LookupResult, error) {
			return idempotency.LookupResult{}, errors.New("provider down")
		}
	}})
	for range 2 {
		if got := c.post("demo-alice", "k-lost", order); got.status != http.StatusServiceUnavailable || c.provider.Calls("") != 0 {
			t.Fatalf("look-up unknown: %d %s, calls %d", got.status, got.body, c.provider.Calls(""))
		}
	}
	var state string
	if err := c.pool.QueryRow(t.Context(), `select state from api_keys`).Scan(&state); err != nil || state != "uncertain" {
		t.Fatalf("record after the unknown look-up: %q %v, want uncertain", state, err)
	}

	// A provider without the charge (its look-up says not happened): the request runs, once; a
	// first attempt refused before any call is released and its retry runs.
	d := newAPI(t, apiOptions{})
	d.chargedThenCompacted("k-never")
	e := newAPI(t, apiOptions{store: d.store})
	e.provider.Fail = func(string, string) error { return billing.ErrConnectRefused }
	if got := e.post("demo-alice", "k-never", order); got.status != http.StatusBadGateway {
		t.Fatalf("not happened, call refused: %d %s", got.status, got.body)
	}
	e.provider.Fail = nil
	if got := e.post("demo-alice", "k-never", order); got.status != http.StatusCreated || e.provider.Calls(billing.EffectCharge) != 1 {
		t.Fatalf("the retry after the refused call: %d %s, charges %d", got.status, got.body, e.provider.Calls(billing.EffectCharge))
	}
	if got := e.post("demo-alice", "k-never", order); got.header.Get(idempotency.ReplayedHeader) != "true" || e.provider.Calls(billing.EffectCharge) != 1 {
		t.Fatalf("the retry after it: %d, charges %d", got.status, e.provider.Calls(billing.EffectCharge))
	}
}
