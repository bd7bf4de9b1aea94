package ledger

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

var schemaName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// ValidSchemaName reports whether name is a schema name replayctl creates: lowercase letters, digits
// and _, starting with a letter, at most 63 bytes (PostgreSQL's identifier limit).
func ValidSchemaName(name string) bool { return schemaName.MatchString(name) }

// WithSearchPath returns databaseURL (URL or key=value form) with its search_path set to schema.
func WithSearchPath(databaseURL, schema string) (string, error) {
	if !strings.Contains(databaseURL, "://") {
		return strings.TrimSpace(databaseURL) + " search_path=" + schema, nil
	}
	u, err := url.Parse(databaseURL)
	if err != nil {
		return "", fmt.Errorf("database URL %s: %w", RedactURL(databaseURL), err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// The lock of a fresh schema is keyed by the schema's name alone, not current_schema(): the runs
// that recreate it connect with the base URL, whose search_path is anyone's.
const (
	freshSchemaLockTry = `select pg_try_advisory_lock(hashtextextended('replayctl.fresh-schema:' || $1, 0))`
	freshSchemaUnlock  = `select pg_advisory_unlock(hashtextextended('replayctl.fresh-schema:' || $1, 0))`
)

// freshSchemaPoll is how often a run waiting for a schema tries its lock again. Polling keeps the
// wait free of the pool's statement_timeout, which a blocking pg_advisory_lock would run into.
const freshSchemaPoll = 250 * time.Millisecond

// OpenFreshSchema drops and recreates schema in the database of databaseURL and returns a store
// whose connections use it. It is for the demo and benchmarks, which must never share a real
// ledger.
//
// Runs on one schema take turns: the schema is held under a session advisory lock from before it
// is dropped until release, so a second run never drops it under a first one (which then failed
// with `relation "replayctl_migrations" does not exist`). While another run holds it, waiting is
// called once and OpenFreshSchema waits, until ctx is done. release closes the store and frees
// the schema; the schema itself stays for the operator to look around.
func OpenFreshSchema(ctx context.Context, databaseURL, schema string, waiting func()) (store *Store, release func(), err error) {
	if !ValidSchemaName(schema) {
		return nil, nil, fmt.Errorf("schema name %q: use lowercase letters, digits and _, starting with a letter", schema)
	}
	base, err := Open(ctx, databaseURL)
	if err != nil {
		return nil, nil, err
	}
	unlock, err := lockFreshSchema(ctx, base, schema, waiting)
	if err != nil {
		base.Close()
		return nil, nil, err
	}
	freeSchema := func() {
		unlock()
		base.Close()
	}
	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := base.pool.Exec(ctx, "drop schema if exists "+ident+" cascade; create schema "+ident); err != nil {
		freeSchema()
		return nil, nil, fmt.Errorf("recreate schema %s: %w", schema, err)
	}
	scoped, err := WithSearchPath(databaseURL, schema)
	if err == nil {
		store, err = Open(ctx, scoped)
	}
	if err != nil {
		freeSchema()
		return nil, nil, err
	}
	return store, func() {
		store.Close()
		freeSchema()
	}, nil
}

// lockFreshSchema takes schema's lock on a connection of base it keeps until unlock.
func lockFreshSchema(ctx context.Context, base *Store, schema string, waiting func()) (unlock func(), err error) {
	conn, err := base.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock schema %s: acquire a connection: %w", schema, err)
	}
	for told := false; ; {
		var locked bool
		if err := conn.QueryRow(ctx, freshSchemaLockTry, schema).Scan(&locked); err != nil {
			conn.Release()
			return nil, fmt.Errorf("lock schema %s: %w", schema, err)
		}
		if locked {
			break
		}
		if !told && waiting != nil {
			waiting()
			told = true
		}
		select {
		case <-ctx.Done():
			conn.Release()
			return nil, fmt.Errorf("waiting for another run to free schema %s: %w", schema, ctx.Err())
		case <-time.After(freshSchemaPoll):
		}
	}
	return func() {
		unlockCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
		defer cancel()
		if _, err := conn.Exec(unlockCtx, freshSchemaUnlock, schema); err != nil {
			// The lock goes with its session: closing the connection frees it.
			conn.Conn().Close(unlockCtx)
		}
		conn.Release()
	}, nil
}
