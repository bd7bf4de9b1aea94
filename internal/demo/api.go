package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/idempotency"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/ledger"
)

// APIStep is one request of the API phase and what came of it.
type APIStep struct {
	// Name says what the step shows; Key is the demo's raw key (the ledger holds only its HMAC).
	Name, Key string
	Status    int
	// Replayed is the Idempotent-Replayed header; Problem the problem type's last segment.
	Replayed, Problem string
	// WantStatus and WantCalls are what the step must give; ProviderCalls is the provider's
	// charge count after it.
	WantStatus               int
	ProviderCalls, WantCalls int64
}

// API is the API phase: the billing API behind the idempotency middleware on the demo's ledger.
type API struct {
	URL   string
	Steps []APIStep
	// Policy is the route's registered retention.
	Policy apikey.Policy
}

// apiPhase serves POST /v1/charges over loopback and shows the answers of the Idempotency-Key
// draft with the provider's call count after each.
func apiPhase(ctx context.Context, store *ledger.Store, step func(string, ...any)) (*API, error) {
	provider := billing.NewProvider()
	tokens := billing.DemoTokens()
	route := billing.ChargesRoute(provider)
	keeper, err := idempotency.New(ctx, idempotency.Config{
		Store: store, KeySecret: billing.DemoKeySecret(), Keyring: billing.DemoKeyring(), Routes: []idempotency.Route{route},
		Scope: tokens.Scope, Authorize: tokens.Authorize, Service: "billing-api (demo)",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, fmt.Errorf("demo: idempotency middleware: %w", err)
	}
	defer keeper.Close(context.WithoutCancel(ctx))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo: listen for the billing API: %w", err)
	}
	srv := &http.Server{Handler: keeper.Handler(route.Method, route.Template, billing.APIHandler(provider, time.Now)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	api := &API{URL: "http://" + ln.Addr().String() + "/v1/charges"}
	step("started the billing API behind the idempotency middleware on %s (ledger table api_keys)", api.URL)
	policies, err := store.RetentionPoliciesList(ctx, apikey.PolicyRoute, route.Name())
	if err == nil && len(policies) == 1 {
		api.Policy = policies[0]
	}

	order := billing.Order{OrderID: "ord-api-1", Customer: "cust-api-1", AmountCents: 12000, Currency: "EUR"}
	do := func(name, token, key string, o billing.Order, wantStatus int, wantCalls int64) error {
		s, err := post(ctx, api.URL, token, key, o)
		if err != nil {
			return err
		}
		s.Name, s.Key, s.WantStatus, s.WantCalls, s.ProviderCalls = name, key, wantStatus, wantCalls, provider.Calls(billing.EffectCharge)
		api.Steps = append(api.Steps, s)
		return nil
	}
	if err := do("first charge", "demo-alice", "demo-key-1", order, http.StatusCreated, 1); err != nil {
		return nil, err
	}
	if err := do("retry with the same key", "demo-alice", "demo-key-1", order, http.StatusCreated, 1); err != nil {
		return nil, err
	}
	changed := order
	changed.AmountCents = 99000
	if err := do("same key, amount changed", "demo-alice", "demo-key-1", changed, http.StatusUnprocessableEntity, 1); err != nil {
		return nil, err
	}
	if err := concurrentDuplicate(ctx, api, provider); err != nil {
		return nil, err
	}
	bob := billing.Order{OrderID: "ord-api-3", Customer: "cust-api-3", AmountCents: 4500, Currency: "EUR"}
	if err := do("bob's charge", "demo-bob", "demo-key-3", bob, http.StatusCreated, 3); err != nil {
		return nil, err
	}
	tokens.Revoke("demo-bob")
	if err := do("bob's retry after his token was revoked", "demo-bob", "demo-key-3", bob, http.StatusForbidden, 3); err != nil {
		return nil, err
	}
	// The first key's replay window closes (aged past it in the ledger rather than waited for).
	key := apikey.Key{ScopeHash: apikey.ScopeHash("acme", "alice", route.Name()), KeyHash: apikey.HashKey(billing.DemoKeySecret(), "demo-key-1")}
	if _, err := store.APIKeysAge(ctx, key, api.Policy.ReplayWindow+time.Hour); err != nil {
		return nil, err
	}
	if err := do("retry after the replay window (looked up)", "demo-alice", "demo-key-1", order, http.StatusGone, 3); err != nil {
		return nil, err
	}
	return api, nil
}

// concurrentDuplicate holds a first request at the provider while its duplicate arrives.
func concurrentDuplicate(ctx context.Context, api *API, provider *billing.Provider) error {
	o := billing.Order{OrderID: "ord-api-2", Customer: "cust-api-2", AmountCents: 3000, Currency: "EUR"}
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	provider.Fail = func(string, string) error {
		once.Do(func() { close(arrived); <-release })
		return nil
	}
	defer func() { provider.Fail = nil }()
	first := make(chan error, 1)
	var s APIStep
	go func() {
		var err error
		s, err = post(ctx, api.URL, "demo-alice", "demo-key-2", o)
		first <- err
	}()
	select {
	case <-arrived:
	case err := <-first:
		return fmt.Errorf("demo: the held request ended early: %v", err)
	}
	// The provider is held (its lock too), so its count is read after the release.
	dup, err := post(ctx, api.URL, "demo-alice", "demo-key-2", o)
	close(release)
	if ferr := <-first; ferr != nil || err != nil {
		return errors.Join(ferr, err)
	}
	calls := provider.Calls(billing.EffectCharge)
	dup.Name, dup.Key, dup.WantStatus, dup.WantCalls, dup.ProviderCalls = "duplicate while the first still runs", "demo-key-2", http.StatusConflict, 2, calls
	s.Name, s.Key, s.WantStatus, s.WantCalls, s.ProviderCalls = "the held first request, finished", "demo-key-2", http.StatusCreated, 2, calls
	api.Steps = append(api.Steps, dup, s)
	return nil
}

func post(ctx context.Context, url, token, key string, o billing.Order) (APIStep, error) {
	body, _ := json.Marshal(o)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return APIStep{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(idempotency.KeyHeader, key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return APIStep{}, fmt.Errorf("demo: POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	var p idempotency.Problem
	b, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("Content-Type") == "application/problem+json" {
		_ = json.Unmarshal(b, &p)
	}
	problem := ""
	if p.Type != "" {
		problem = p.Type[len(idempotency.ProblemTypeBase):]
	}
	return APIStep{Status: resp.StatusCode, Replayed: resp.Header.Get(idempotency.ReplayedHeader), Problem: problem}, nil
}

// CompareAPI lists every step whose answer or provider count is not the expected one.
func CompareAPI(a *API) []string {
	var out []string
	for _, s := range a.Steps {
		if s.Status != s.WantStatus || s.ProviderCalls != s.WantCalls {
			out = append(out, fmt.Sprintf("api %s: got %d with %d provider calls, expected %d with %d", s.Name, s.Status, s.ProviderCalls, s.WantStatus, s.WantCalls))
		}
	}
	return out
}
