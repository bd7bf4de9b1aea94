package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/replayctl/replayctl/idempotency"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/testenv/ledgerfake"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/seal"
)

// api is the billing API behind the middleware, served over loopback HTTP on a fresh ledger, or
// on ledgerfake's records (fake) for a test of the middleware's rules that needs no PostgreSQL.
type api struct {
	t        *testing.T
	store    *ledger.Store
	pool     *pgxpool.Pool
	fake     *ledgerfake.APIRecords
	provider *billing.Provider
	tokens   *billing.Tokens
	keeper   *idempotency.Keeper
	srv      *httptest.Server
}

type apiOptions struct {
	// fake runs the middleware on ledgerfake.APIRecords, held to the ledger's behaviour by
	// ledgerconformance: no PostgreSQL.
	fake    bool
	keyring *seal.Keyring
	store   *ledger.Store
	lease   time.Duration
	route   func(*idempotency.Route)
	metrics *prometheus.Registry
	tracer  trace.TracerProvider
}

func newAPI(t *testing.T, o apiOptions) *api {
	t.Helper()
	a := &api{t: t, store: o.store, provider: billing.NewProvider(), tokens: billing.DemoTokens()}
	var store idempotency.Store
	switch {
	case o.fake:
		a.fake = ledgerfake.NewAPIRecords()
		store = a.fake
	default:
		if a.store == nil {
			a.store = pgtest.Ledger(t)
		}
		a.pool, store = pgtest.Pool(t, a.store), a.store
	}
	if o.keyring == nil {
		o.keyring = billing.DemoKeyring()
	}
	route := billing.ChargesRoute(a.provider)
	if o.route != nil {
		o.route(&route)
	}
	cfg := idempotency.Config{
		Store: store, KeySecret: billing.DemoKeySecret(), Keyring: o.keyring, Routes: []idempotency.Route{route},
		Scope: a.tokens.Scope, Authorize: a.tokens.Authorize, Lease: o.lease, Service: "test",
	}
	if o.metrics != nil {
		cfg.Metrics = o.metrics
	}
	cfg.TracerProvider = o.tracer
	k, err := idempotency.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.keeper = k
	t.Cleanup(func() { _ = k.Close(context.Background()) })
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", k.Handler(route.Method, route.Template, billing.APIHandler(a.provider, time.Now)))
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

// answer is one HTTP answer, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) problemType() string {
	var p idempotency.Problem
	_ = json.Unmarshal(a.body, &p)
	return p.Type
}

func (a *api) post(token, key string, order billing.Order) answer {
	a.t.Helper()
	body, _ := json.Marshal(order)
	req, err := http.NewRequest(http.MethodPost, a.srv.URL+"/v1/charges", bytes.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if key != "" {
		req.Header.Set(idempotency.KeyHeader, key)
	}
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

func (a *api) records() int {
	a.t.Helper()
	if a.fake != nil {
		return a.fake.Len()
	}
	var n int
	if err := a.pool.QueryRow(a.t.Context(), `select count(*) from api_keys`).Scan(&n); err != nil {
		a.t.Fatal(err)
	}
	return n
}

var order = billing.Order{OrderID: "ord-7731", Customer: "cust-secret-name", AmountCents: 123456, Currency: "EUR"}

type contextT = context.Context

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
