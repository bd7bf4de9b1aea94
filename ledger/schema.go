package ledger

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"

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

// OpenFreshSchema drops and recreates schema in the database of databaseURL and returns a store whose
// connections use it. It is for the demo and benchmarks, which must never share a real ledger.
func OpenFreshSchema(ctx context.Context, databaseURL, schema string) (*Store, error) {
	if !ValidSchemaName(schema) {
		return nil, fmt.Errorf("schema name %q: use lowercase letters, digits and _, starting with a letter", schema)
	}
	base, err := Open(ctx, databaseURL)
	if err != nil {
		return nil, err
	}
	ident := pgx.Identifier{schema}.Sanitize()
	_, err = base.Pool.Exec(ctx, "drop schema if exists "+ident+" cascade; create schema "+ident)
	base.Close()
	if err != nil {
		return nil, fmt.Errorf("recreate schema %s: %w", schema, err)
	}
	scoped, err := WithSearchPath(databaseURL, schema)
	if err != nil {
		return nil, err
	}
	return Open(ctx, scoped)
}
