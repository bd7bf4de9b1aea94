// Package pgtest gives each test its own schema in a real PostgreSQL database, so tests run in
// parallel without seeing each other's rows. A schema is dropped when its test ends, or, for
// Ledger's migrated schemas, emptied and handed to the binary's next test (reuse.go) and, once the
// binary exits, to the next binary that needs one (adopt.go).
package pgtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// defaultURL is the database used when neither REPLAYCTL_TEST_DATABASE_URL nor DATABASE_URL is
// set: the local PostgreSQL over its unix socket, database test.
const defaultURL = "postgres:///test?host=/var/run/postgresql"

const startHint = "start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start " +
	"(or point REPLAYCTL_TEST_DATABASE_URL at another server)"

// setupTimeout bounds connecting, creating and dropping a schema, so a stuck server fails the
// test instead of hanging until the go test deadline.
const setupTimeout = 30 * time.Second

// PostgreSQL truncates identifiers beyond 63 bytes; "t_" + name + "_" + 8 hex digits must fit.
const maxNameLen = 63 - len("t_") - len("_") - 8

var (
	once    sync.Once
	base    string
	source  string
	pool    *pgxpool.Pool
	openErr error

	notIdent = regexp.MustCompile(`[^a-z0-9]+`)
)

// connect opens the one pool a test binary shares for creating and dropping schemas.
func connect() {
	base, source = os.Getenv("REPLAYCTL_TEST_DATABASE_URL"), "$REPLAYCTL_TEST_DATABASE_URL"
	if base == "" {
		base, source = os.Getenv("DATABASE_URL"), "$DATABASE_URL"
	}
	if base == "" {
		base, source = defaultURL, defaultURL
	}
	cfg, err := pgxpool.ParseConfig(base)
	if err != nil {
		openErr = fmt.Errorf("parse the database URL from %s: %w", source, err)
		return
	}
	cfg.MaxConns = 2
	// Its catalog queries (a schema's shape at every reuse) were planned with parallel workers on
	// bloated catalogs, each a process started and stopped for a 30 ms query.
	cfg.ConnConfig.RuntimeParams["max_parallel_workers_per_gather"] = "0"
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		openErr = fmt.Errorf("PostgreSQL at %s is unreachable: %w; %s", source, err, startHint)
		return
	}
	vacuumCatalogsIfBloated()
}

// shared returns the one pool a test binary shares for set-up, connecting on first use.
func shared(t testing.TB) *pgxpool.Pool {
	t.Helper()
	once.Do(connect)
	if openErr != nil {
		t.Fatalf("pgtest: %v", openErr)
	}
	return pool
}

// URL creates a fresh schema for t, dropped with everything in it at cleanup, and returns the
// base database URL with search_path set to it. The base URL comes from
// REPLAYCTL_TEST_DATABASE_URL, else DATABASE_URL, else defaultURL; it may be a postgres:// URL or a
// key=value DSN.
func URL(t testing.TB) string {
	t.Helper()
	pool := shared(t)
	schema := schemaName(t.Name())
	ident := pgx.Identifier{schema}.Sanitize()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if _, err := pool.Exec(ctx, "create schema "+ident); err != nil {
		t.Fatalf("pgtest: create schema %s: %v", schema, err)
	}
	t.Cleanup(func() { dropSchema(t, schema) })
	return withSearchPath(base, schema)
}

// dropSchema drops schema with everything in it, at a test's cleanup.
func dropSchema(t testing.TB, schema string) {
	// The test's context is already cancelled when cleanups run.
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if _, err := pool.Exec(ctx, "drop schema if exists "+pgx.Identifier{schema}.Sanitize()+" cascade"); err != nil {
		t.Errorf("pgtest: drop schema %s: %v", schema, err)
	}
}

// schemaName turns a test name into a unique lowercase identifier of at most 63 bytes.
func schemaName(testName string) string {
	name := strings.Trim(notIdent.ReplaceAllString(strings.ToLower(testName), "_"), "_")
	if len(name) > maxNameLen {
		name = strings.TrimRight(name[:maxNameLen], "_")
	}
	return fmt.Sprintf("t_%s_%08x", name, rand.Uint32())
}

// withSearchPath appends search_path to a URL's query or a DSN's keywords. pgx passes unknown
// parameters to the server as run-time settings and lets the last occurrence win, so a
// search_path already in the base URL is overridden without rewriting the rest of it.
func withSearchPath(databaseURL, schema string) string {
	return withParam(databaseURL, "search_path", schema)
}

// WaitFor polls cond until it reports true, failing t when cond returns an error or timeout
// passes: tests wait for a state instead of sleeping for a guess. Call it from the test goroutine.
func WaitFor(t testing.TB, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	delay := 5 * time.Millisecond
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("pgtest.WaitFor: %v", err)
		}
		if ok {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("pgtest.WaitFor: condition still false after %s", timeout)
		}
		time.Sleep(min(delay, left))
		delay = min(2*delay, 100*time.Millisecond)
	}
}
