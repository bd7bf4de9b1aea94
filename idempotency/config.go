package idempotency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/seal"
)

// Store is what the middleware needs of the ledger; *ledger.Store implements it.
type Store interface {
	// CheckSchema refuses a ledger not migrated to this version (`replayctl migrate`).
	CheckSchema(ctx context.Context) error
	APIKeysClaim(ctx context.Context, c apikey.Claim) (bool, apikey.Record, error)
	APIKeysTakeOver(ctx context.Context, c apikey.Claim, seen time.Time) (bool, error)
	APIKeysCallStarted(ctx context.Context, k apikey.Key, owner string) (bool, error)
	APIKeysHeartbeat(ctx context.Context, k apikey.Key, owner string, lease time.Duration) (bool, error)
	APIKeysComplete(ctx context.Context, c apikey.Completion) (bool, error)
	APIKeysCompleteLate(ctx context.Context, c apikey.Completion) (*apikey.LateCompletion, error)
	APIKeysRelease(ctx context.Context, k apikey.Key, owner string) (bool, error)
	APIKeysMarkUncertain(ctx context.Context, k apikey.Key, owner, note string) (bool, error)
	APIKeysMarkLapsedUncertain(ctx context.Context, k apikey.Key) (bool, error)
	APIKeysMarkReview(ctx context.Context, k apikey.Key, note string, seen time.Time) (bool, error)
	APIKeysStartOverCompacted(ctx context.Context, c apikey.Claim) (bool, error)
	APIKeysReviewCompacted(ctx context.Context, c apikey.Claim, note string) (bool, error)
	APIKeysNeedingLookUp(ctx context.Context, routes []string, minAge time.Duration, limit int) (int64, []apikey.Record, error)
	APIKeysSettle(ctx context.Context, s apikey.Settlement) (bool, error)
	APIKeyDailyAdd(ctx context.Context, counts []apikey.DailyCount) error
	RetentionPoliciesRegister(ctx context.Context, policies []apikey.Policy) error
}

// Scope is who a request acts for. The same key under another tenant or principal is another
// record: knowing someone's key never reads their response.
type Scope struct {
	Tenant    string
	Principal string
}

// Route declares one endpoint's idempotency contract.
type Route struct {
	// Method and Template name the route as the router does ("POST", "/v1/charges"): the
	// template, never the path with its IDs, is part of the scope.
	Method, Template string
	// RequireKey answers a request without Idempotency-Key with 400; otherwise it runs without
	// idempotency.
	RequireKey bool
	// Irreversible routes (payments, refunds, permission changes) look an expired key up before
	// anything runs: an expired key is not a new request.
	Irreversible bool
	// ExpiredIsNew lets a reversible route run a request whose key's replay window closed as a
	// new one. Refused together with Irreversible.
	ExpiredIsNew bool
	// Retention is the route's contract; the windows are derived from it (apikey.Derive) and
	// registered in the ledger when the middleware starts.
	Retention apikey.Delays
	// TombstoneRetention is how long past evidence_until `replayctl keys prune` keeps a record's
	// tombstone: how long a request with its key can still come in after the contract's last
	// inquiry (a restored offline queue, a replayed client log). Registered with the route's
	// policy; 0 registers none, and prune keeps its default of five years.
	TombstoneRetention time.Duration
	// Fingerprint leaves volatile members out of the request fingerprint (a client's send time,
	// trace IDs). Changing it changes the algorithm: list the old options in
	// PreviousFingerprints for at least the replay window, so older records still compare.
	Fingerprint          fingerprint.Options
	PreviousFingerprints []fingerprint.Options
	// Lookup asks the provider whether the request's external call happened, by the operation ID
	// the handler passed to it (OperationID) or the record's external reference. Needed on an
	// irreversible route to settle an expired key or an uncertain record without a person.
	Lookup LookupFunc
	// StoreHeaders are the response headers stored and replayed besides Content-Type and Location.
	StoreHeaders []string
}

// Name is the route's name in the ledger, metrics and policies: "POST /v1/charges".
func (r Route) Name() string { return r.Method + " " + r.Template }

// Config configures New.
type Config struct {
	// Store is the ledger (*ledger.Store, opened with ledger.Open).
	Store Store
	// KeySecret keys the HMAC-SHA-256 of every idempotency key; at least 32 bytes. Keep it like a
	// signing key: a new secret makes every stored key unknown.
	KeySecret []byte
	// Keyring seals stored responses (package seal).
	Keyring *seal.Keyring
	// Routes are the routes Handler may wrap.
	Routes []Route
	// Scope names the tenant and principal of a request (from its credentials); an error is
	// answered 401.
	Scope func(*http.Request) (Scope, error)
	// Authorize, when set, runs for every request before anything is answered from the ledger,
	// so a revoked token gets 403, never a stored response; an error is answered 403.
	Authorize func(*http.Request, Scope) error
	// Service names who registers the routes' policies (registered_by); default "idempotency".
	Service string
	// Lease is the first lease on a record, longer than the slowest handler with its retries;
	// default 30 s. Heartbeat renews it; default a third of Lease.
	Lease, Heartbeat time.Duration
	// MaxBody caps a request body read for its fingerprint; default 1 MiB (413 above).
	MaxBody int64
	// FlushEvery is how often the daily counts are added to the ledger; default 10 s.
	FlushEvery time.Duration
	// Logger gets warnings (payload mismatches, records left uncertain); default slog.Default().
	// Never a raw key or a body: keys appear as the first 12 digits of their hash.
	Logger *slog.Logger
	// Metrics, when set, gets the middleware's counters (docs/api.md, "Metrics").
	Metrics prometheus.Registerer
	// Now is the clock of the daily counts; default time.Now.
	Now func() time.Time
	// TracerProvider gets a span per request (docs/tracing.md); nil uses OpenTelemetry's global
	// provider as it is when New runs.
	TracerProvider trace.TracerProvider
}

// ErrBadConfig matches every configuration error of New.
var ErrBadConfig = errors.New("bad idempotency configuration")

const (
	defaultLease      = 30 * time.Second
	defaultMaxBody    = 1 << 20
	defaultFlushEvery = 10 * time.Second
	minSecret         = 32
)

func (c *Config) validate() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if c.Store == nil {
		add("Store is required (a *ledger.Store)")
	}
	if len(c.KeySecret) < minSecret {
		add("KeySecret has %d bytes, want at least %d", len(c.KeySecret), minSecret)
	}
	if c.Keyring == nil {
		add("Keyring is required: stored responses are sealed (seal.ReadKeyringFile)")
	}
	if c.Scope == nil {
		add("Scope is required: records are per tenant and principal")
	}
	if len(c.Routes) == 0 {
		add("Routes is empty")
	}
	seen := map[string]bool{}
	for i, r := range c.Routes {
		name := r.Name()
		switch {
		case r.Method == "" || !strings.HasPrefix(r.Template, "/"):
			add("Routes[%d]: Method and a Template starting with / are required, got %q", i, name)
		case seen[name]:
			add("Routes[%d]: %s appears twice", i, name)
		case r.Irreversible && r.ExpiredIsNew:
			add("route %s: Irreversible and ExpiredIsNew contradict each other: an irreversible route looks an expired key up", name)
		case r.Irreversible && r.Lookup == nil:
			add("route %s: Irreversible needs a Lookup, or every expired key and uncertain record goes to a person", name)
		}
		seen[name] = true
		if _, _, err := apikey.Derive(r.Retention); err != nil {
			add("route %s: %v", name, err)
		}
		if r.TombstoneRetention < 0 {
			add("route %s: TombstoneRetention %s is negative", name, r.TombstoneRetention)
		}
		if _, err := fingerprint.New(r.Fingerprint); err != nil {
			add("route %s: %v", name, err)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrBadConfig, strings.Join(problems, "; "))
	}
	if c.Lease <= 0 {
		c.Lease = defaultLease
	}
	if c.Heartbeat <= 0 || c.Heartbeat >= c.Lease {
		c.Heartbeat = c.Lease / 3
	}
	if c.MaxBody <= 0 {
		c.MaxBody = defaultMaxBody
	}
	if c.FlushEvery <= 0 {
		c.FlushEvery = defaultFlushEvery
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Service == "" {
		c.Service = "idempotency"
	}
	return nil
}
