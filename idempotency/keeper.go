// Package idempotency is net/http middleware for Idempotency-Key on API requests, on the same
// ledger as the event consumers' effects but in its own records (package apikey, table
// api_keys): the first request with a key runs the handler and its response is stored sealed
// (package seal) for the route's replay window; a retry gets that response marked as a replay;
// a retry while the first runs gets 409; the same key with another request body gets 422; a
// handler that dies after its external call started leaves the record uncertain, never re-run.
// Answers follow the IETF httpapi Idempotency-Key draft as RFC 9457 problems. docs/api.md is the
// guide.
package idempotency

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/every"
	"github.com/replayctl/replayctl/internal/tracing"
)

// Keeper is the middleware of one service: its routes, its ledger and its counts.
type Keeper struct {
	cfg     Config
	routes  map[string]*route
	metrics *metrics
	counts  dailyCounts
	owner   string
	seq     atomic.Uint64

	leases    leases
	stopFlush func()
	stopLease func()
	closeOnce sync.Once
	// traced: a tracer provider was installed when New ran, so each request gets a span.
	traced bool
	tracer trace.Tracer
}

// route is a Route with what New derived from it.
type route struct {
	Route
	name                   string
	replayWindow, evidence time.Duration
	hasher                 fingerprint.Hasher
	previous               []fingerprint.Options
	storeHeaders           []string
}

// New checks cfg, registers every route's retention policy in the ledger and starts adding the
// daily counts to it. Close stops it.
func New(ctx context.Context, cfg Config) (*Keeper, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("%w: metrics: %v", ErrBadConfig, err)
	}
	k := &Keeper{cfg: cfg, routes: map[string]*route{}, metrics: m, owner: "api:" + rand.Text()[:10], traced: tracing.Active(cfg.TracerProvider), tracer: tracing.TracerOf(cfg.TracerProvider)}
	policies := make([]apikey.Policy, 0, len(cfg.Routes))
	for _, r := range cfg.Routes {
		replay, evidence, _ := apikey.Derive(r.Retention) // validate checked it
		hasher, _ := fingerprint.New(r.Fingerprint)
		rt := &route{Route: r, name: r.Name(), replayWindow: replay, evidence: evidence, hasher: hasher,
			previous: r.PreviousFingerprints, storeHeaders: append(append([]string{}, defaultStoredHeaders...), r.StoreHeaders...)}
		k.routes[rt.name] = rt
		policies = append(policies, apikey.Policy{Kind: apikey.PolicyRoute, Name: rt.name, Delays: r.Retention,
			ReplayWindow: replay, EvidenceWindow: evidence, Irreversible: r.Irreversible, ExpiredIsNew: r.ExpiredIsNew,
			TombstoneWindow: r.TombstoneRetention, RegisteredBy: cfg.Service})
	}
	if err := cfg.Store.CheckSchema(ctx); err != nil {
		return nil, fmt.Errorf("idempotency: %w", err)
	}
	if err := cfg.Store.RetentionPoliciesRegister(ctx, policies); err != nil {
		return nil, fmt.Errorf("idempotency: %w", err)
	}
	k.leases = leases{store: cfg.Store, lease: cfg.Lease, heartbeat: cfg.Heartbeat, log: cfg.Logger}
	k.stopLease = k.leases.start()
	k.stopFlush = every.Interval(context.Background(), cfg.FlushEvery, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := k.counts.flush(ctx, cfg.Store); err != nil {
			cfg.Logger.Warn("idempotency: add the daily counts to the ledger (kept for the next try)", "err", err)
		}
		return true
	})
	return k, nil
}

// Handler wraps h, the handler of the route named method and template in Config.Routes. It
// panics on a route not in Config.Routes, as http.ServeMux does on a bad pattern: a wiring
// mistake to find at start-up.
func (k *Keeper) Handler(method, template string, h http.Handler) http.Handler {
	rt, ok := k.routes[method+" "+template]
	if !ok {
		panic(fmt.Sprintf("idempotency: route %s %s is not in Config.Routes", method, template))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k.traced {
			ctx, span := k.startRequest(r.Context(), rt)
			defer span.End()
			r = r.WithContext(ctx)
		}
		k.serve(rt, h, w, r)
	})
}

// Close adds the last daily counts to the ledger and stops. Requests still running finish on
// their own.
func (k *Keeper) Close(ctx context.Context) error {
	var err error
	k.closeOnce.Do(func() {
		k.stopLease()
		k.stopFlush()
		err = k.counts.flush(ctx, k.cfg.Store)
	})
	return err
}

// nextOwner names one request's lease: the instance and a sequence number.
func (k *Keeper) nextOwner() string {
	return fmt.Sprintf("%s:%d", k.owner, k.seq.Add(1))
}
