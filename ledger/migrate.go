package ledger

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded SQL file; its version is the number before the first '_' of its name.
type migration struct {
	version int
	name    string
	sql     string
}

// MigrateResult reports what Migrate did.
type MigrateResult struct {
	// Applied names the migrations this run applied, in order ("0001_init"); empty when the schema
	// was already current.
	Applied []string
	// Version is the schema version after the run.
	Version int
}

// loadMigrations parses the embedded files once; a bad file name is a build mistake, reported by
// every call (and by the package tests) rather than by a panic at start-up.
var loadMigrations = sync.OnceValues(func() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	out := make([]migration, 0, len(names))
	seen := map[int]string{}
	for _, file := range names {
		name := strings.TrimSuffix(path.Base(file), ".sql")
		prefix, _, _ := strings.Cut(name, "_")
		version, err := strconv.Atoi(prefix)
		if err != nil || version <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number, as in 0001_init.sql", file)
		}
		if other, dup := seen[version]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", other, name, version)
		}
		seen[version] = name
		body, err := migrationFiles.ReadFile(file)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: version, name: name, sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
})

// EmbeddedMigrationsDigest identifies the embedded migrations by their names and text: two
// binaries with the same digest make the same schema, which is what lets the test helpers hand a
// schema one test binary migrated to the next (internal/testenv/pgtest).
func EmbeddedMigrationsDigest() (string, error) {
	ms, err := loadMigrations()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, m := range ms {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", m.name, len(m.sql), m.sql)
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}

// EmbeddedSchemaVersion returns the schema version this binary migrates to, its highest embedded
// migration, and that migration's name, for help text and --version that never open a connection.
func EmbeddedSchemaVersion() (version int, name string, err error) {
	ms, err := loadMigrations()
	if err != nil || len(ms) == 0 {
		return 0, "", err
	}
	last := ms[len(ms)-1]
	return last.version, last.name, nil
}

// wantedVersion is the highest embedded migration, the schema version this binary needs.
func wantedVersion() (int, error) {
	ms, err := loadMigrations()
	if err != nil || len(ms) == 0 {
		return 0, err
	}
	return ms[len(ms)-1].version, nil
}

const migrationsCreate = `
create table if not exists replayctl_migrations (
    version    integer     primary key,
    name       text        not null,
    applied_at timestamptz not null default now()
)`

// migrateLockKey names the advisory lock per schema, so migrations of different schemas in one
// database (tests, the demo) never wait on each other.
const migrateLockKey = `select current_schema(), coalesce(hashtext('replayctl.migrate.' || current_schema()), 0)`

const migrationsRecorded = `select version from replayctl_migrations`

const migrationsInsert = `insert into replayctl_migrations (version, name) values ($1, $2)`

const migrationsMaxVersion = `select coalesce(max(version), 0) from replayctl_migrations`

// pgUndefinedTable is SQLSTATE undefined_table.
const pgUndefinedTable = "42P01"

// unlockTimeout bounds releasing the migration lock, which must happen even after ctx is done.
const unlockTimeout = 10 * time.Second

// Migrate applies the embedded migrations the schema lacks, each in its own transaction with its
// record in replayctl_migrations. A session advisory lock on one dedicated connection serialises
// concurrent runs, so running it twice, or from two processes at once, applies each migration
// exactly once. The schema is the connection's current_schema(), set by search_path.
func (s *Store) Migrate(ctx context.Context) (MigrateResult, error) {
	var res MigrateResult
	migrations, err := loadMigrations()
	if err != nil {
		return res, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return res, fmt.Errorf("%w: migrate: acquire a connection: %w", ErrUnavailable, err)
	}
	defer conn.Release()

	var schema *string
	var key int32
	if err := conn.QueryRow(ctx, migrateLockKey).Scan(&schema, &key); err != nil {
		return res, fmt.Errorf("migrate: read current schema: %w", err)
	}
	if schema == nil {
		return res, errors.New("migrate: the search_path names no existing schema; create the schema or fix search_path in --database-url")
	}
	if _, err := conn.Exec(ctx, "select pg_advisory_lock($1)", key); err != nil {
		return res, fmt.Errorf("migrate: wait for the migration lock of schema %s (another replayctl migrate may be running): %w", *schema, err)
	}
	defer unlockMigrations(conn, key)

	if _, err := conn.Exec(ctx, migrationsCreate); err != nil {
		return res, fmt.Errorf("migrate: create replayctl_migrations in schema %s: %w", *schema, err)
	}
	rows, err := conn.Query(ctx, migrationsRecorded)
	if err != nil {
		return res, fmt.Errorf("migrate: read applied migrations: %w", err)
	}
	recorded, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return res, fmt.Errorf("migrate: read applied migrations: %w", err)
	}
	applied := map[int]bool{}
	for _, v := range recorded {
		applied[v] = true
		res.Version = max(res.Version, v)
	}

	for _, m := range migrations {
		if applied[m.version] {
			continue
		}
		if err := applyMigration(ctx, conn, m); err != nil {
			return res, err
		}
		res.Applied = append(res.Applied, m.name)
		res.Version = max(res.Version, m.version)
	}
	return res, nil
}

func applyMigration(ctx context.Context, conn *pgxpool.Conn, m migration) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate %s: begin: %w", m.name, err)
	}
	defer tx.Rollback(ctx) // a no-op after Commit
	// A migration's run time grows with the ledger, and the operator asked for it explicitly: ctx,
	// not the pool's interactive statement_timeout, bounds it.
	if _, err := tx.Exec(ctx, "set local statement_timeout = 0"); err != nil {
		return fmt.Errorf("migrate %s: %w", m.name, err)
	}
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return fmt.Errorf("migrate %s: %w", m.name, err)
	}
	if _, err := tx.Exec(ctx, migrationsInsert, m.version, m.name); err != nil {
		return fmt.Errorf("migrate %s: record it: %w", m.name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate %s: commit: %w", m.name, err)
	}
	return nil
}

// unlockMigrations releases the migration lock. If that fails the connection is closed instead,
// because a session lock lives as long as its connection and the pool would otherwise keep it.
func unlockMigrations(conn *pgxpool.Conn, key int32) {
	ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
	defer cancel()
	if _, err := conn.Exec(ctx, "select pg_advisory_unlock($1)", key); err != nil {
		_ = conn.Conn().Close(ctx)
	}
}

// SchemaVersion returns the schema version the ledger is at and the one this binary needs. A
// database without replayctl_migrations is at version 0.
func (s *Store) SchemaVersion(ctx context.Context) (current, wanted int, err error) {
	wanted, err = wantedVersion()
	if err != nil {
		return 0, 0, err
	}
	err = s.pool.QueryRow(ctx, migrationsMaxVersion).Scan(&current)
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == pgUndefinedTable {
		return 0, wanted, nil
	}
	if err != nil {
		return 0, wanted, fmt.Errorf("read the ledger schema version: %w", err)
	}
	return current, wanted, nil
}

// CheckSchema returns nil when the ledger schema is at the version this binary needs, and an error
// matching ErrSchemaOutdated, saying what to run, when it is older or newer.
func (s *Store) CheckSchema(ctx context.Context) error {
	current, wanted, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if current != wanted {
		return &schemaMismatchError{current: current, wanted: wanted}
	}
	// Migration numbers have gaps, and a schema migrated by a binary that had a later number but
	// not an earlier one is at the wanted maximum while missing a table: count them all.
	missing, err := s.missingMigrations(ctx)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return &schemaMismatchError{current: current, wanted: wanted, missing: missing}
	}
	return nil
}

const migrationsMissing = `select v from unnest($1::int[]) as v
	where not exists (select from replayctl_migrations m where m.version = v) order by v`

// missingMigrations names the embedded migrations the schema has not recorded.
func (s *Store) missingMigrations(ctx context.Context) ([]string, error) {
	migrations, err := loadMigrations()
	if err != nil {
		return nil, err
	}
	versions := make([]int, len(migrations))
	names := make(map[int]string, len(migrations))
	for i, m := range migrations {
		versions[i] = m.version
		names[m.version] = m.name
	}
	rows, err := s.pool.Query(ctx, migrationsMissing, versions)
	if err != nil {
		return nil, fmt.Errorf("read the ledger's applied migrations: %w", err)
	}
	absent, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("read the ledger's applied migrations: %w", err)
	}
	out := make([]string, len(absent))
	for i, v := range absent {
		out[i] = names[v]
	}
	return out, nil
}
