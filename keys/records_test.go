package keys_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/internal/testenv/ledgerfake"
	"github.com/replayctl/replayctl/keys"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

// The tests of this file run on ledgerfake.APIRecords, held to *ledger.Store's behaviour by
// ledgerconformance: no PostgreSQL.

// fakeWithRecords is a fake ledger holding records and the route's policy (evidence window 3h).
func fakeWithRecords(t *testing.T, records ...ledgertest.APIKey) *ledgerfake.APIRecords {
	t.Helper()
	f := ledgerfake.NewAPIRecords()
	if err := f.RetentionPoliciesRegister(t.Context(), []apikey.Policy{{Kind: apikey.PolicyRoute, Name: route,
		ReplayWindow: time.Hour, EvidenceWindow: 3 * time.Hour, RegisteredBy: "test"}}); err != nil {
		t.Fatal(err)
	}
	f.AddAPIKeys(records...)
	return f
}

func keyHash(key string) string { return apikey.HashKey(secret, key) }

// The key as the caller's header carried it, a Structured Field string, finds the record.
func TestShowFindsAKeyGivenInItsQuotedHeaderForm(t *testing.T) {
	t.Parallel()
	store := fakeWithRecords(t, ledgertest.APIKey{KeyHash: keyHash("abc")})
	for _, raw := range []string{"abc", `"abc"`, ` "abc" `} {
		recs, err := keys.Show(t.Context(), store, keys.Lookup{RawKey: raw, Secret: secret})
		if err != nil || len(recs) != 1 {
			t.Errorf("--key %s: %v %v", raw, recs, err)
		}
	}
}

// A key or hash no record can hold is the operator's input error (exit 2), never "no such record".
func TestShowRefusesAMalformedKeyOrHashAsBadInput(t *testing.T) {
	t.Parallel()
	store := fakeWithRecords(t, ledgertest.APIKey{KeyHash: keyHash("abc")})
	for _, l := range []keys.Lookup{
		{RawKey: "a\tb", Secret: secret},
		{RawKey: strings.Repeat("k", 256), Secret: secret},
		{KeyHash: "hmac-sha256:86013fbe93c2"},
		{KeyHash: "86013fbe93c2"},
		{RawKey: "abc", Secret: secret, ScopeHash: "sha256:zz"},
		{RawKey: "abc", Secret: secret, KeyHash: keyHash("abc")},
		{RawKey: "abc"},
		{},
	} {
		_, err := keys.Show(t.Context(), store, l)
		if !errors.Is(err, keys.ErrBadRequest) {
			t.Errorf("%+v: %v, want a bad request", l, err)
		}
	}
}

func TestShowKeepsOneScopeAndSaysWhereNothingWasFound(t *testing.T) {
	t.Parallel()
	tenant2 := apikey.ScopeHash("t2", "p", route)
	store := fakeWithRecords(t, ledgertest.APIKey{KeyHash: keyHash("abc")}, ledgertest.APIKey{KeyHash: keyHash("abc"), ScopeHash: tenant2})
	all, err := keys.Show(t.Context(), store, keys.Lookup{KeyHash: keyHash("abc")})
	if err != nil || len(all) != 2 {
		t.Fatalf("every scope: %d, %v", len(all), err)
	}
	one, err := keys.Show(t.Context(), store, keys.Lookup{KeyHash: keyHash("abc"), ScopeHash: tenant2})
	if err != nil || len(one) != 1 || one[0].ScopeHash != tenant2 || one[0].OperationID != apikey.OperationID(tenant2, keyHash("abc")) {
		t.Fatalf("--scope-hash: %+v, %v", one, err)
	}
	_, err = keys.Show(t.Context(), store, keys.Lookup{KeyHash: keyHash("abc"), Route: "POST /v1/refunds"})
	if !errors.Is(err, keys.ErrNotFound) || !strings.Contains(err.Error(), "on route POST /v1/refunds") {
		t.Errorf("another route: %v; want not found, saying where it looked", err)
	}
}

func TestResolveRefusesWhatItCannotDecideAndChangesNothing(t *testing.T) {
	t.Parallel()
	store := fakeWithRecords(t,
		ledgertest.APIKey{KeyHash: keyHash("twice"), State: "uncertain", CallsStarted: 1},
		ledgertest.APIKey{KeyHash: keyHash("twice"), ScopeHash: apikey.ScopeHash("t2", "p", route), State: "uncertain", CallsStarted: 1},
		ledgertest.APIKey{KeyHash: keyHash("done"), State: "completed", CallsStarted: 1},
		ledgertest.APIKey{KeyHash: keyHash("running"), CallsStarted: 1},
		ledgertest.APIKey{KeyHash: keyHash("once"), State: "uncertain", CallsStarted: 1})
	note := "checked the provider's dashboard"
	for _, c := range []struct {
		name string
		req  keys.ResolveRequest
		want error
		says string
	}{
		{"an unknown resolution", keys.ResolveRequest{Lookup: keys.Lookup{KeyHash: keyHash("once")}, As: "maybe", Note: note}, keys.ErrBadRequest, "--as"},
		{"a short note", keys.ResolveRequest{Lookup: keys.Lookup{KeyHash: keyHash("once")}, As: apikey.ResolutionHappened, Note: "ok"}, keys.ErrBadRequest, "--note"},
		{"a key of two scopes", keys.ResolveRequest{Lookup: keys.Lookup{KeyHash: keyHash("twice")}, As: apikey.ResolutionHappened, Note: note}, keys.ErrBadRequest, "has 2 records"},
		{"a completed record", keys.ResolveRequest{Lookup: keys.Lookup{KeyHash: keyHash("done")}, As: apikey.ResolutionHappened, Note: note}, keys.ErrNotUncertain, "it is completed"},
		{"a live lease", keys.ResolveRequest{Lookup: keys.Lookup{KeyHash: keyHash("running")}, As: apikey.ResolutionHappened, Note: note}, keys.ErrNotUncertain, "it is processing"},
		{"a record not confirmed", keys.ResolveRequest{Lookup: keys.Lookup{KeyHash: keyHash("once")}, As: apikey.ResolutionHappened, Note: note,
			Confirm: func(v keys.RecordView) (bool, error) { return false, nil }}, keys.ErrNotConfirmed, "--yes"},
	} {
		_, err := keys.Resolve(t.Context(), store, c.req)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v; want %v saying %q", c.name, err, c.want, c.says)
		}
	}
	if got := store.AuditActions(); len(got) != 0 {
		t.Errorf("audited %v although nothing was resolved", got)
	}
	if recs, _ := store.APIKeysUncertain(t.Context(), "", 10); len(recs) != 3 {
		t.Errorf("%d records still awaiting a decision, want the 3 left alone", len(recs))
	}
}

func TestResolveSettlesWithTheRoutesEvidenceWindowAndAnAuditEntry(t *testing.T) {
	t.Parallel()
	store := fakeWithRecords(t, ledgertest.APIKey{KeyHash: keyHash("once"), State: "uncertain", CallsStarted: 1},
		ledgertest.APIKey{KeyHash: keyHash("other-route"), Route: "POST /v1/refunds", State: "uncertain", CallsStarted: 1})
	var shown keys.RecordView
	was, err := keys.Resolve(t.Context(), store, keys.ResolveRequest{Lookup: keys.Lookup{RawKey: "once", Secret: secret},
		As: apikey.ResolutionHappened, ExternalRef: "ch_42", Note: "found ch_42 in the dashboard", Actor: "alice",
		Confirm: func(v keys.RecordView) (bool, error) { shown = v; return true, nil }})
	if err != nil || was.State != apikey.StateUncertain || shown.KeyHash != keyHash("once") {
		t.Fatalf("resolve: %+v, %v (shown %+v)", was, err, shown)
	}
	recs, err := keys.Show(t.Context(), store, keys.Lookup{KeyHash: keyHash("once")})
	if err != nil || len(recs) != 1 {
		t.Fatal(recs, err)
	}
	r := recs[0]
	if r.State != apikey.StateReconciled || r.Resolution != apikey.ResolutionHappened || r.ExternalRef != "ch_42" ||
		r.EvidenceUntil == nil || r.ReplayUntil == nil || r.EvidenceUntil.Sub(*r.ReplayUntil) != 3*time.Hour {
		t.Fatalf("resolved record %+v; want reconciled, happened, ch_42, evidence for the route's 3h", r)
	}
	// A route without a registered policy keeps the evidence 400 days.
	if _, err := keys.Resolve(t.Context(), store, keys.ResolveRequest{Lookup: keys.Lookup{KeyHash: keyHash("other-route")},
		As: apikey.ResolutionNotHappened, Note: "no charge in the dashboard", Actor: "alice"}); err != nil {
		t.Fatal(err)
	}
	other, _ := keys.Show(t.Context(), store, keys.Lookup{KeyHash: keyHash("other-route")})
	if len(other) != 1 || other[0].EvidenceUntil == nil || other[0].EvidenceUntil.Sub(*other[0].ReplayUntil) != 400*24*time.Hour {
		t.Errorf("unregistered route's record %+v; want 400 days of evidence", other)
	}
	if got := strings.Join(store.AuditActions(), " "); got != "keys.resolved keys.resolved" {
		t.Errorf("audit %s", got)
	}
}

func TestResolveSaysWhenTheRecordChangedWhileThePersonDecided(t *testing.T) {
	t.Parallel()
	store := fakeWithRecords(t, ledgertest.APIKey{KeyHash: keyHash("once"), State: "uncertain", CallsStarted: 1})
	_, err := keys.Resolve(t.Context(), store, keys.ResolveRequest{Lookup: keys.Lookup{KeyHash: keyHash("once")},
		As: apikey.ResolutionHappened, Note: "found it in the dashboard", Actor: "alice",
		Confirm: func(v keys.RecordView) (bool, error) {
			// The route's look-up settles it while the person reads the prompt.
			_, err := store.APIKeysResolve(t.Context(), apikey.Settlement{Key: apikey.Key{ScopeHash: v.ScopeHash, KeyHash: v.KeyHash},
				Resolution: apikey.ResolutionHappened, Note: "look-up"}, ledger.AuditEntry{})
			return true, err
		}})
	if !errors.Is(err, keys.ErrNotUncertain) || !strings.Contains(err.Error(), "changed while you decided") {
		t.Fatalf("err %v; want not uncertain, changed while deciding", err)
	}
	if got := store.AuditActions(); len(got) != 0 {
		t.Errorf("audited %v: the person's resolution did not happen", got)
	}
}

func TestUncertainRefusesAnUnknownRouteWithTheNearest(t *testing.T) {
	t.Parallel()
	store := fakeWithRecords(t, ledgertest.APIKey{KeyHash: keyHash("once"), State: "uncertain", CallsStarted: 1})
	if _, err := keys.Uncertain(t.Context(), store, "POST /v1/charge", 10); !errors.Is(err, keys.ErrUnknownRoute) ||
		!strings.Contains(err.Error(), "did you mean POST /v1/charges?") {
		t.Errorf("a typo: %v", err)
	}
	recs, err := keys.Uncertain(t.Context(), store, route, 10)
	if err != nil || len(recs) != 1 || recs[0].NextRetry.Answer != "uncertain" || recs[0].NextRetry.Status != 503 {
		t.Errorf("the route's: %+v, %v", recs, err)
	}
}
