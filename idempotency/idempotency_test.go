package idempotency_test

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/idempotency"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/seal"
)

func TestTwoHundredConcurrentRequestsWithOneKeyMakeOneProviderCall(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	var mu sync.Mutex
	byStatus := map[int]int{}
	var first []byte
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			got := a.post("demo-alice", "key-200", order)
			mu.Lock()
			defer mu.Unlock()
			byStatus[got.status]++
			if got.status == http.StatusCreated {
				if got.header.Get(idempotency.ReplayedHeader) == "" {
					first = got.body
				} else if first != nil && !bytes.Equal(got.body, first) {
					t.Errorf("a replay differs from the first answer:\n%s\n%s", got.body, first)
				}
			} else if got.status == http.StatusConflict && got.header.Get("Retry-After") == "" {
				t.Errorf("409 without Retry-After")
			}
		})
	}
	wg.Wait()
	if n := a.provider.Calls(billing.EffectCharge); n != 1 {
		t.Fatalf("the provider received %d charges for one key, want 1 (answers %v)", n, byStatus)
	}
	if byStatus[http.StatusCreated]+byStatus[http.StatusConflict] != 200 {
		t.Fatalf("answers %v: want only 201 (first or replay) and 409", byStatus)
	}
	// After the first finished, a retry is a replay with the same body.
	got := a.post("demo-alice", "key-200", order)
	if got.status != http.StatusCreated || got.header.Get(idempotency.ReplayedHeader) != "true" || !bytes.Equal(got.body, first) {
		t.Fatalf("retry: %d %q %s", got.status, got.header.Get(idempotency.ReplayedHeader), got.body)
	}
}

func TestTheTableHoldsNoRawKeyAndNoPlaintextBodyField(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	const rawKey = "raw-key-4f1d9a77"
	if got := a.post("demo-alice", rawKey, order); got.status != http.StatusCreated {
		t.Fatalf("first: %d %s", got.status, got.body)
	}
	a.post("demo-alice", rawKey, order)
	a.post("demo-alice", rawKey, billing.Order{OrderID: "ord-7731", Customer: "cust-secret-name", AmountCents: 999999, Currency: "EUR"})
	if err := a.keeper.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	var dump strings.Builder
	for _, table := range []string{"api_keys", "api_key_daily", "retention_policies", "audit"} {
		rows, err := a.pool.Query(t.Context(), `select t::text from `+table+` t`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			dump.WriteString(line + "\n")
		}
		rows.Close()
	}
	if a.records() != 1 || !strings.Contains(dump.String(), "hmac-sha256:") {
		t.Fatalf("want one record keyed by its HMAC; dump:\n%s", dump.String())
	}
	for _, secret := range []string{rawKey, order.OrderID, order.Customer, "123456", "127160", "alice", "acme", "chargeId", "feeCents"} {
		if strings.Contains(dump.String(), secret) {
			t.Errorf("the ledger's tables hold %q:\n%s", secret, dump.String())
		}
	}
}

func TestOldRowsOpenAfterRotationAndNewRowsUseTheNewKey(t *testing.T) {
	t.Parallel()
	oldLine := seal.NewKeyLine("2026-11")
	oldRing, err := seal.ParseKeyring([]byte(oldLine))
	if err != nil {
		t.Fatal(err)
	}
	a := newAPI(t, apiOptions{keyring: oldRing})
	first := a.post("demo-alice", "before-rotation", order)
	if first.status != http.StatusCreated {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	rotated, err := seal.ParseKeyring([]byte(oldLine + "\n" + seal.NewKeyLine("2026-12")))
	if err != nil {
		t.Fatal(err)
	}
	b := newAPI(t, apiOptions{keyring: rotated, store: a.store})
	again := b.post("demo-alice", "before-rotation", order)
	if again.status != http.StatusCreated || again.header.Get(idempotency.ReplayedHeader) != "true" || !bytes.Equal(again.body, first.body) {
		t.Fatalf("an old row after rotation: %d %s", again.status, again.body)
	}
	other := billing.Order{OrderID: "ord-2", Customer: "c", AmountCents: 500, Currency: "EUR"}
	if got := b.post("demo-alice", "after-rotation", other); got.status != http.StatusCreated {
		t.Fatalf("new row: %d %s", got.status, got.body)
	}
	var ids []string
	rows, _ := a.pool.Query(t.Context(), `select response_key_id from api_keys order by created_at`)
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	if strings.Join(ids, ",") != "2026-11,2026-12" {
		t.Fatalf("key IDs on the rows: %v, want the old row under 2026-11 and the new under 2026-12", ids)
	}
	// A service whose keyring lost the old key never runs the request again.
	newOnly, _ := seal.ParseKeyring([]byte(seal.NewKeyLine("2027-01")))
	c := newAPI(t, apiOptions{keyring: newOnly, store: a.store})
	if got := c.post("demo-alice", "before-rotation", order); got.status != http.StatusInternalServerError ||
		!strings.HasSuffix(got.problemType(), "response-unreadable") || c.provider.Calls("") != 0 {
		t.Fatalf("a row of a retired key: %d %s, provider calls %d", got.status, got.body, c.provider.Calls(""))
	}
}

func TestOneKeyUnderTwoTenantsIsTwoRecordsAndNeverReplaysAcross(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{fake: true})
	// Each caller's own order (the provider charges an order once, whatever the key).
	orderOf := func(n string) billing.Order { o := order; o.OrderID += "-" + n; return o }
	alice := a.post("demo-alice", "shared-key", orderOf("alice"))
	carol := a.post("demo-carol", "shared-key", orderOf("carol"))
	bob := a.post("demo-bob", "shared-key", orderOf("bob"))
	for name, got := range map[string]answer{"alice": alice, "carol": carol, "bob": bob} {
		if got.status != http.StatusCreated || got.header.Get(idempotency.ReplayedHeader) != "" {
			t.Fatalf("%s: %d replayed=%q: want a first answer of its own", name, got.status, got.header.Get(idempotency.ReplayedHeader))
		}
	}
	if bytes.Equal(alice.body, carol.body) {
		t.Fatal("carol got alice's stored response")
	}
	if a.records() != 3 || a.provider.Calls(billing.EffectCharge) != 3 {
		t.Fatalf("records %d, charges %d: want 3 and 3", a.records(), a.provider.Calls(billing.EffectCharge))
	}
}

func TestARevokedPrincipalGets403NeverTheStoredResponse(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{fake: true})
	if got := a.post("demo-alice", "k-revoke", order); got.status != http.StatusCreated {
		t.Fatalf("first: %d", got.status)
	}
	a.tokens.Revoke("demo-alice")
	got := a.post("demo-alice", "k-revoke", order)
	if got.status != http.StatusForbidden || bytes.Contains(got.body, []byte("chargeId")) ||
		got.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("revoked: %d %s", got.status, got.body)
	}
	if got := a.post("nobody", "k-revoke", order); got.status != http.StatusUnauthorized {
		t.Fatalf("unknown token: %d", got.status)
	}
}

func TestAChangedBodyIs422AndAMissingKey400(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{fake: true})
	a.post("demo-alice", "k-422", order)
	changed := order
	changed.AmountCents++
	got := a.post("demo-alice", "k-422", changed)
	if got.status != http.StatusUnprocessableEntity || !strings.HasSuffix(got.problemType(), "/key-reused") || bytes.Contains(got.body, []byte("chargeId")) {
		t.Fatalf("changed amount: %d %s", got.status, got.body)
	}
	got = a.post("demo-alice", "", order)
	if got.status != http.StatusBadRequest || !strings.HasSuffix(got.problemType(), "/missing-key") {
		t.Fatalf("no key: %d %s", got.status, got.body)
	}
	if a.provider.Calls(billing.EffectCharge) != 1 {
		t.Fatalf("charges %d, want 1", a.provider.Calls(billing.EffectCharge))
	}
}

func TestARetryAfterTheReplayWindowOnAnIrreversibleRouteIsLookedUpNeverChargedAgain(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	first := a.post("demo-alice", "k-expired", order)
	if first.status != http.StatusCreated {
		t.Fatalf("first: %d", first.status)
	}
	ledgertest.EndKeyWindows(t, a.pool, time.Second, 0)
	got := a.post("demo-alice", "k-expired", order)
	var p idempotency.Problem
	_ = jsonUnmarshal(got.body, &p)
	if got.status != http.StatusGone || !strings.HasPrefix(p.ExternalRef, "ch_") || a.provider.Calls(billing.EffectCharge) != 1 {
		t.Fatalf("after the window: %d %s, charges %d", got.status, got.body, a.provider.Calls(billing.EffectCharge))
	}
	// A tombstone too, and a changed body after the window is still refused on this route.
	ledgertest.MakeKeyTombstones(t, a.pool)
	if got := a.post("demo-alice", "k-expired", order); got.status != http.StatusGone || a.provider.Calls(billing.EffectCharge) != 1 {
		t.Fatalf("tombstone: %d %s", got.status, got.body)
	}
	changed := order
	changed.AmountCents = 1
	if got := a.post("demo-alice", "k-expired", changed); got.status != http.StatusUnprocessableEntity {
		t.Fatalf("changed body after the window: %d", got.status)
	}
}

func TestAnExpiredKeyTheProviderNeverChargedRunsAndOneItCannotTellGoesToReview(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	// The first request failed at the provider before anything was charged: no charge exists.
	a.provider.Fail = func(string, string) error { return billing.ErrConnectRefused }
	if got := a.post("demo-alice", "k-nothing", order); got.status != http.StatusBadGateway {
		t.Fatalf("refused: %d %s", got.status, got.body)
	}
	a.provider.Fail = nil
	// Released, not uncertain: the same request runs again.
	if got := a.post("demo-alice", "k-nothing", order); got.status != http.StatusCreated || a.provider.Calls(billing.EffectCharge) != 1 {
		t.Fatalf("after a refused call: %d, charges %d", got.status, a.provider.Calls(billing.EffectCharge))
	}
	// Pretend the charge is not in the provider's list (its look-up lost it): an expired key
	// whose look-up says not-happened runs.
	b := newAPI(t, apiOptions{store: a.store})
	ledgertest.EndKeyWindows(t, b.pool, time.Second, 0)
	if got := b.post("demo-alice", "k-nothing", order); got.status != http.StatusCreated || b.provider.Calls(billing.EffectCharge) != 1 {
		t.Fatalf("not happened: %d, charges %d", got.status, b.provider.Calls(billing.EffectCharge))
	}
	// A look-up that cannot tell sends the record to review and charges nothing.
	c := newAPI(t, apiOptions{store: a.store, route: func(r *idempotency.Route) {
		r.Lookup = func(_ contextT, _ idempotency.LookupRequest) (idempotency.LookupResult, error) {
			return idempotency.LookupResult{}, errors.New("provider down")
		}
	}})
	ledgertest.EndKeyWindows(t, c.pool, time.Second, 0)
	got := c.post("demo-alice", "k-nothing", order)
	if got.status != http.StatusServiceUnavailable || got.header.Get("Retry-After") == "" || c.provider.Calls("") != 0 {
		t.Fatalf("unknown: %d %s", got.status, got.body)
	}
	var state string
	_ = c.pool.QueryRow(t.Context(), `select state from api_keys`).Scan(&state)
	if state != "uncertain" {
		t.Fatalf("state %q, want uncertain (manual review)", state)
	}
}

func TestAHandlerThatFailsAfterItsCallLeavesTheRecordUncertainUntilALookUpSettlesIt(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{fake: true})
	a.provider.FailAfter = func(string, string) error { return errors.New("connection reset after the request was sent") }
	if got := a.post("demo-alice", "k-uncertain", order); got.status != http.StatusBadGateway {
		t.Fatalf("first: %d", got.status)
	}
	a.provider.FailAfter = nil
	got := a.post("demo-alice", "k-uncertain", order)
	if got.status != http.StatusServiceUnavailable || !strings.HasSuffix(got.problemType(), "/outcome-uncertain") || a.provider.Calls(billing.EffectCharge) != 1 {
		t.Fatalf("retry of an uncertain record: %d %s, charges %d", got.status, got.body, a.provider.Calls(billing.EffectCharge))
	}
	rep, err := a.keeper.ReconcileOnce(t.Context(), 0)
	if err != nil || rep.Happened != 1 {
		t.Fatalf("reconcile: %+v %v", rep, err)
	}
	got = a.post("demo-alice", "k-uncertain", order)
	var p idempotency.Problem
	_ = jsonUnmarshal(got.body, &p)
	if got.status != http.StatusGone || !strings.HasPrefix(p.ExternalRef, "ch_") || a.provider.Calls(billing.EffectCharge) != 1 {
		t.Fatalf("after reconcile: %d %s, charges %d", got.status, got.body, a.provider.Calls(billing.EffectCharge))
	}
}

func TestARecordFingerprintedBeforeAnOptionsChangeIsComparedUnderItsOwnAlgorithm(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	first := a.post("demo-alice", "k-alg", order)
	if first.status != http.StatusCreated {
		t.Fatalf("first: %d", first.status)
	}
	// The service now leaves customer out of the fingerprint and lists the old options.
	b := newAPI(t, apiOptions{store: a.store, route: func(r *idempotency.Route) {
		r.PreviousFingerprints = []fingerprint.Options{r.Fingerprint}
		r.Fingerprint = fingerprint.Options{Exclude: []string{"customer"}}
	}})
	if got := b.post("demo-alice", "k-alg", order); got.status != http.StatusCreated || got.header.Get(idempotency.ReplayedHeader) != "true" {
		t.Fatalf("same request under the old algorithm: %d %s", got.status, got.body)
	}
	changed := order
	changed.AmountCents++
	if got := b.post("demo-alice", "k-alg", changed); got.status != http.StatusUnprocessableEntity {
		t.Fatalf("changed request under the old algorithm: %d", got.status)
	}
	// Without the old options listed, the record cannot be compared: refused, never run.
	c := newAPI(t, apiOptions{store: a.store, route: func(r *idempotency.Route) {
		r.Fingerprint = fingerprint.Options{Exclude: []string{"customer"}}
	}})
	if got := c.post("demo-alice", "k-alg", order); got.status != http.StatusUnprocessableEntity || c.provider.Calls("") != 0 {
		t.Fatalf("unknown algorithm: %d, calls %d", got.status, c.provider.Calls(""))
	}
}

func TestTheMetricsCountAnswersByRouteAndNeverNameAKeyOrAClient(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	a := newAPI(t, apiOptions{fake: true, metrics: reg})
	a.post("demo-alice", "metric-key-1", order)
	a.post("demo-alice", "metric-key-1", order)
	a.post("demo-alice", "", order)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := []string{}
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
				if strings.Contains(l.GetValue(), "metric-key") || strings.Contains(l.GetValue(), "alice") {
					t.Errorf("a label holds a key or a client: %s", l.GetValue())
				}
			}
			got[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetCounter().GetValue()
		}
	}
	for _, want := range []string{"handled", "replayed", "missing_key"} {
		if got["idempotency_api_requests_total{answer="+want+",route=POST /v1/charges}"] != 1 {
			t.Errorf("%s: %v", want, got)
		}
	}
}

func TestAHandlerThatOutlivesItsFirstLeaseKeepsItByHeartbeat(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{fake: true, lease: time.Second})
	a.provider.Fail = func(string, string) error { time.Sleep(2500 * time.Millisecond); return nil }
	done := make(chan answer, 1)
	go func() { done <- a.post("demo-alice", "k-slow", order) }()
	time.Sleep(1800 * time.Millisecond) // past the first lease: only the heartbeat keeps it
	if got := a.post("demo-alice", "k-slow", order); got.status != http.StatusConflict {
		t.Fatalf("a retry while the slow first runs: %d %s, want 409", got.status, got.body)
	}
	if got := <-done; got.status != http.StatusCreated {
		t.Fatalf("the slow first: %d %s", got.status, got.body)
	}
	if got := a.post("demo-alice", "k-slow", order); got.header.Get(idempotency.ReplayedHeader) != "true" || a.provider.Calls(billing.EffectCharge) != 1 {
		t.Fatalf("after it: %d, charges %d", got.status, a.provider.Calls(billing.EffectCharge))
	}
}
