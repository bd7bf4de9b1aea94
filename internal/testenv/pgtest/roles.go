package pgtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Role creates a login role with no privileges for t, dropped at cleanup (with whatever was
// granted to it), and returns its name and databaseURL rewritten to connect as it. Roles are
// global to the server, so the name is random; the server's trust authentication lets it log in
// without a password.
func Role(t testing.TB, databaseURL, kind string) (name, roleURL string) {
	t.Helper()
	pool := shared(t)
	name = fmt.Sprintf("r_%s_%08x", kind, rand.Uint32())
	ident := pgx.Identifier{name}.Sanitize()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if _, err := pool.Exec(ctx, "create role "+ident+" login"); err != nil {
		t.Fatalf("pgtest: create role %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		// Sessions of the role still open (a pool closed by a later cleanup) would block the drop.
		_, _ = pool.Exec(ctx, "select pg_terminate_backend(pid) from pg_stat_activity where usename = $1", name)
		if _, err := pool.Exec(ctx, "drop owned by "+ident); err != nil {
			t.Errorf("pgtest: drop owned by %s: %v", name, err)
		}
		if _, err := pool.Exec(ctx, "drop role "+ident); err != nil {
			t.Errorf("pgtest: drop role %s: %v", name, err)
		}
	})
	return name, withParam(databaseURL, "user", name)
}

// Exec runs sql on the shared setup connection (the database owner's), for grants and other
// set-up a test's own roles may not do.
func Exec(t testing.TB, sql string) {
	t.Helper()
	pool := shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if _, err := pool.Exec(ctx, sql); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// withParam appends key=value to a URL's query or a DSN's keywords; the last occurrence wins.
func withParam(databaseURL, key, value string) string {
	if !strings.HasPrefix(databaseURL, "postgres://") && !strings.HasPrefix(databaseURL, "postgresql://") {
		return strings.TrimSpace(databaseURL) + " " + key + "=" + value
	}
	sep := "?"
	if strings.Contains(databaseURL, "?") {
		sep = "&"
	}
	return databaseURL + sep + key + "=" + value
}
