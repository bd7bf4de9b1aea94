// Package ledger is replayctl's PostgreSQL adapter: the embedded schema migrations and the
// queries over effects, effect versions, jobs, job targets and the audit log. SQL lives here and
// nowhere else; rows become domain types and PostgreSQL errors become sentinels at this boundary.
package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replayctl/replayctl/apikey"
)

// Defaults applied to every connection unless the database URL sets them: operators can tell
// replayctl's sessions apart in pg_stat_activity, and a query stuck behind a lock fails instead of
// hanging a terminal or a CI job. Bulk statements raise the timeout locally where they need to.
const (
	defaultApplicationName  = "replayctl"
	defaultStatementTimeout = "60s"
)

// urlHint is appended to errors about the database URL, naming where the operator sets it.
const urlHint = "check --database-url / REPLAYCTL_DATABASE_URL"

// Store is a connection pool to the ledger database.
type Store struct {
	// pool is the ledger's own: every transaction is a named operation of this package, and tests
	// that inspect tables open a pool of their own (pgtest.Pool).
	pool *pgxpool.Pool
	// group batches the SDK's keyed row updates; nil sends each on its own.
	group *groupCommit
	// reads batches the SDK's reads of one event's rows; nil sends each on its own.
	reads *eventReads
	// apiClaims and apiWrites batch the HTTP middleware's claims, and its call-started marks and
	// completions, across concurrent requests.
	apiClaims *apiBatch[apikey.Claim, apiClaimed]
	apiWrites *apiBatch[apiWrite, bool]
}

// Open connects to the ledger at databaseURL (a postgres:// URL or a key=value DSN) and pings it
// under ctx, so a wrong URL fails here rather than at the first query. A failed connection matches
// ErrUnavailable. Errors show the URL with its password redacted.
func Open(ctx context.Context, databaseURL string, opts ...Option) (*Store, error) {
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	store, err := open(ctx, databaseURL, o)
	if err != nil {
		return nil, scrubPasswords(err, databaseURL)
	}
	return store, nil
}

func open(ctx context.Context, databaseURL string, o openOptions) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w; %s", ErrInvalidURL, err, urlHint)
	}
	if o.handlers > 0 && !strings.Contains(databaseURL, "pool_max_conns") {
		cfg.MaxConns = int32(SDKPoolSize(o.handlers))
	}
	if o.handlers > 0 && !strings.Contains(databaseURL, "pool_min_conns") {
		cfg.MinConns = min(cfg.MaxConns, int32(sdkWarmConns(o.handlers)))
	}
	params := cfg.ConnConfig.RuntimeParams
	if o.handlers > 0 {
		for name, value := range sdkPlannerSettings {
			if _, ok := params[name]; !ok {
				params[name] = value
			}
		}
	}
	if _, ok := params["application_name"]; !ok {
		params["application_name"] = defaultApplicationName
	}
	// No JIT compilation unless the URL asks for it (jit=on). Every statement here reads by key,
	// bounded by a job or a batch, but PostgreSQL decides to compile from the plan's estimated
	// cost, which grows with the table: execute's drift check over 18,000 targets (65 ms of work at
	// 30 M rows) compiled for 35-55 ms at 5-30 M rows, and for 580 ms once its estimate passed
	// jit_optimize_above_cost, a cost that follows the ledger's size and not the job's
	// (docs/benchmarks.md, "Execute at 30 M and 100 M rows without JIT"). Not on an SDK store's
	// connections: its statements read a few rows by key and never reach the threshold, and a
	// parameter fewer is one fewer for a PgBouncer in front of the fleet to refuse.
	if o.handlers == 0 && !setByURL(params, "jit") {
		params["jit"] = "off"
	}
	if !setByURL(params, "statement_timeout") {
		params["statement_timeout"] = defaultStatementTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open the ledger at %s: %w; %s", RedactURL(databaseURL), err, urlHint)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		hint := urlHint
		if _, answered := errors.AsType[*pgconn.PgError](err); !answered {
			hint = "is PostgreSQL running there? " + urlHint
		}
		return nil, fmt.Errorf("%w: connect to %s: %w; %s", ErrUnavailable, RedactURL(databaseURL), err, hint)
	}
	return &Store{pool: pool, group: newGroupCommit(pool), reads: newEventReads(pool),
		apiClaims: newAPIClaims(pool), apiWrites: newAPIWrites(pool)}, nil
}

// setByURL says whether the URL set the run-time setting name, as a parameter of its own or in
// its options (-c name=value).
func setByURL(params map[string]string, name string) bool {
	_, ok := params[name]
	return ok || strings.Contains(params["options"], name)
}

// Close closes the pool, waiting for connections in use to be released.
func (s *Store) Close() { s.pool.Close() }

// Option adjusts how Open connects.
type Option func(*openOptions)

type openOptions struct {
	handlers int
}

// sdkPlannerSettings are set on the connections of an SDK store (ForHandlers). Every statement
// the SDK sends per message finds a few rows by key, and pgx prepares it, so PostgreSQL may plan
// it once per connection and keep that generic plan. Planned while the table was small (a new
// consumer, a fresh schema) the plan scanned the whole table, or walked every row of the
// consumer, and kept doing so as the table grew until autovacuum's next analyze: 20,000 live
// events on a fresh table ran at 254 events/s with 16 handlers (8.4 ms a statement) and 2,834/s
// with 1,024; planned at each execution, for the table as it is, 543/s and 3,767/s in the same
// sitting (docs/benchmarks.md).
var sdkPlannerSettings = map[string]string{"plan_cache_mode": "force_custom_plan"}

// ForHandlers sizes the pool for an SDK consumer handling that many messages at once
// (SDKPoolSize), unless the URL sets pool_max_conns itself, and has its connections plan each
// statement for the table as it is (sdkPlannerSettings). Without it the pool has pgxpool's
// default, the CPU count but at least 4, which has nothing to do with how many handlers wait.
func ForHandlers(handlers int) Option {
	return func(o *openOptions) { o.handlers = handlers }
}

// SDKPoolSize is the pool a consumer of handlers concurrent handlers needs. The group committer
// and the batched reads hold a connection only while a statement is in flight, at most
// defaultGroupFlushers per kind of write and defaultReadFlushers for reads, whatever the number
// of handlers; a handler holds one of its own only for the rare statements sent alone (a
// release, an uncertain mark, an incident, the version registry), so sdkSpareConns cover them.
// A pool grown with the handlers gained nothing and took connections PostgreSQL counts against
// max_connections (100 by default): 256 handlers asked for 136.
func SDKPoolSize(handlers int) int {
	return max(4, min(handlers, sdkSpareConns)+groupKinds*defaultGroupFlushers+defaultReadFlushers)
}

// sdkSpareConns are the connections beyond the batching's for statements a handler sends alone.
const sdkSpareConns = 8

// sdkWarmConns is how many connections an SDK store opens as it starts, in the background: as
// many as the batching sends statements on at once, or the handlers can keep busy. Opened on
// demand, the first messages after a start paid a new backend per statement kind (a fork, the
// authentication, the session's settings, the first plans), and a canary's 180 targets took
// 420-530 ms each from claim to outcome instead of about 200 (docs/benchmarks.md).
func sdkWarmConns(handlers int) int {
	return min(handlers, groupKinds*defaultGroupFlushers+defaultReadFlushers)
}

// DatabaseNow is the database's clock: what dates every ledger row, and so what a signed
// decision's statement is dated by, whatever the operator's machine says.
func (s *Store) DatabaseNow(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := s.pool.QueryRow(ctx, `select now()`).Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("read the database's clock: %w", translate(err))
	}
	return now, nil
}
