package pgtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Migrating a schema costs about a third of a second and dropping it a little more, most of what
// a short ledger test takes. Ledger therefore keeps the schemas its tests are done with, emptied
// (truncated, the migrations' own rows kept), and hands them to the binary's next tests: a schema
// whose structure a test changed (prune making or dropping a week's partition, a grant, a column)
// is dropped instead, so every test still starts from a freshly migrated layout.
//
// A reused schema is named after the backend of a connection the binary holds open for its
// lifetime (reuseOwner): a schema whose owner backend is gone belongs to a binary that exited.
// The next binary that needs a schema adopts such a one (adopt.go) when the same migrations made
// it the same day, and drops it otherwise: in one `go test ./...` most packages start from the
// schemas the packages before them left, instead of migrating their own.

var (
	reuseMu   sync.Mutex
	reuseFree []string
	reuseNext int
	// reuseShape is each reusable schema's structure when it was migrated, to compare at reset.
	reuseShape = map[string]migrated{}

	ownerOnce sync.Once
	ownerPID  uint32
	ownerConn *pgx.Conn
	ownerErr  error
)

const reusePrefix = "pgtest_"

// reuseOwner opens the connection whose backend names this binary's schemas.
func reuseOwner(t testing.TB) (uint32, error) {
	t.Helper()
	shared(t)
	ownerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		ownerConn, ownerErr = pgx.Connect(ctx, base)
		if ownerErr != nil {
			return
		}
		ownerPID = ownerConn.PgConn().PID()
		ownerErr = loadMigrationsTag()
	})
	return ownerPID, ownerErr
}

func dropIfUnclaimed(ctx context.Context, schema string) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return
	}
	defer tx.Rollback(ctx) // a no-op after Commit; a failed drop leaves the schema to the next binary
	var mine bool
	if err := tx.QueryRow(ctx, `select pg_try_advisory_xact_lock(hashtext($1))`, schema).Scan(&mine); err != nil || !mine {
		return
	}
	if _, err := tx.Exec(ctx, "drop schema if exists "+pgx.Identifier{schema}.Sanitize()+" cascade"); err != nil {
		return
	}
	_ = tx.Commit(ctx)
}

// reusableURL returns the URL of an empty, migrated schema of t's own: one an earlier test of
// this binary emptied, or a new one migrate must fill. At cleanup the schema is emptied for the
// next test, or dropped if its structure changed or it cannot be emptied.
func reusableURL(t testing.TB, migrate func(url string)) string {
	t.Helper()
	pid, err := reuseOwner(t)
	if err != nil {
		t.Logf("pgtest: schemas are not reused (%v)", err)
		url := URL(t)
		migrate(url)
		return url
	}
	reuseMu.Lock()
	var schema string
	n := len(reuseFree)
	reused := n > 0 // only schemas migrated and emptied are free
	if reused {
		schema, reuseFree = reuseFree[n-1], reuseFree[:n-1]
	} else {
		reuseNext++
		schema = fmt.Sprintf("%s%d_%d", reusePrefix, pid, reuseNext)
	}
	reuseMu.Unlock()
	url := withSearchPath(base, schema)

	t.Cleanup(func() { release(t, schema) })
	if !reused {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		if m, ok := adopt(ctx, schema); ok {
			reuseMu.Lock()
			reuseShape[schema] = m
			reuseMu.Unlock()
			migrate(url) // opens the store; the schema is current, so nothing is applied
			return url
		}
		pool := shared(t)
		if _, err := pool.Exec(ctx, "create schema "+pgx.Identifier{schema}.Sanitize()); err != nil {
			t.Fatalf("pgtest: create schema %s: %v", schema, err)
		}
		migrate(url)
		m, err := migratedOf(ctx, pool, schema)
		if err != nil {
			t.Fatalf("pgtest: read schema %s: %v", schema, err)
		}
		if err := tagMigrated(ctx, schema, m.shape); err != nil {
			t.Fatalf("pgtest: tag schema %s: %v", schema, err)
		}
		reuseMu.Lock()
		reuseShape[schema] = m
		reuseMu.Unlock()
		return url
	}
	migrate(url)
	return url
}

// release empties schema for the next test, or drops it.
func release(t testing.TB, schema string) {
	// The test's context is already cancelled when cleanups run.
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	reuseMu.Lock()
	want, known := reuseShape[schema]
	reuseMu.Unlock()
	err := errors.New("never migrated")
	if known {
		err = empty(ctx, schema, want)
	}
	if err == nil {
		reuseMu.Lock()
		reuseFree = append(reuseFree, schema)
		reuseMu.Unlock()
		return
	}
	reuseMu.Lock()
	delete(reuseShape, schema)
	reuseMu.Unlock()
	dropSchema(t, schema)
}

// errShapeChanged says a test changed the schema's structure: it is dropped, not reused.
var errShapeChanged = errors.New("the schema's structure changed")

// migrated is a schema's structure as migrate left it.
type migrated struct {
	shape string
	// partitions are the names of the partitions migrate made (of weeks ahead).
	partitions []string
}

func migratedOf(ctx context.Context, db queryRower, schema string) (migrated, error) {
	var m migrated
	if err := db.QueryRow(ctx, shapeQuery, schema).Scan(&m.shape); err != nil {
		return m, err
	}
	err := db.QueryRow(ctx, partitionsQuery, schema).Scan(&m.partitions)
	return m, err
}

const partitionsQuery = `select coalesce(array_agg(relname::text order by relname), '{}')
	from pg_class where relnamespace = $1::regnamespace and relispartition and relkind in ('r', 'p')`

// empty truncates every table of schema but the migrations' record, in one transaction that
// first checks the structure is still the migrated one. Partitions made since (prune makes the
// weeks to 120 days ahead where migrate made 40) are dropped first: a schema whose only change is
// weeks made ahead is what migrate would make once those are gone, and most ledger tests prune.
func empty(ctx context.Context, schema string, want migrated) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) // a no-op after Commit
	// A session left behind by the test (a subprocess, an idle transaction) must not hold the
	// next test up: the schema is dropped instead.
	if _, err := tx.Exec(ctx, `set local lock_timeout = '2s'`); err != nil {
		return err
	}
	got, err := migratedOf(ctx, tx, schema)
	if err != nil {
		return err
	}
	if got.shape != want.shape {
		var added []string
		for _, p := range got.partitions {
			if !slices.Contains(want.partitions, p) {
				added = append(added, pgx.Identifier{schema, p}.Sanitize())
			}
		}
		if len(added) == 0 {
			return errShapeChanged
		}
		if _, err := tx.Exec(ctx, "drop table "+strings.Join(added, ", ")); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, shapeQuery, schema).Scan(&got.shape); err != nil {
			return err
		}
		if got.shape != want.shape {
			return errShapeChanged
		}
	}
	var tables []string
	if err := tx.QueryRow(ctx, `select coalesce(array_agg(format('%I.%I', n.nspname, c.relname)), '{}')
		from pg_class c join pg_namespace n on n.oid = c.relnamespace
		where n.nspname = $1 and c.relkind in ('r', 'p') and not c.relispartition
		  and c.relname <> 'replayctl_migrations'`, schema).Scan(&tables); err != nil {
		return err
	}
	// Only the tables the test wrote are truncated: a truncate gives each table, index and
	// partition new files and rewrites its catalog rows, and most tests write a few of the
	// schema's tables. Every sequence starts again, as `restart identity` did, since a failed
	// insert advances one whose table stays empty.
	used, err := nonEmpty(ctx, tx, tables)
	if err != nil {
		return err
	}
	if len(used) > 0 {
		if _, err := tx.Exec(ctx, "truncate "+strings.Join(used, ", ")+" cascade"); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, `select setval(s.seqrelid, s.seqstart, false)
		from pg_sequence s join pg_class c on c.oid = s.seqrelid join pg_namespace n on n.oid = c.relnamespace
		where n.nspname = $1`, schema); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// nonEmpty returns the tables (qualified, quoted names) that hold a row, in one statement.
func nonEmpty(ctx context.Context, tx pgx.Tx, tables []string) ([]string, error) {
	if len(tables) == 0 {
		return nil, nil
	}
	parts := make([]string, len(tables))
	for i, table := range tables {
		parts[i] = fmt.Sprintf("select %d where exists (select from %s)", i, table)
	}
	rows, err := tx.Query(ctx, strings.Join(parts, " union all "))
	if err != nil {
		return nil, err
	}
	indexes, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, err
	}
	used := make([]string, len(indexes))
	for i, index := range indexes {
		used[i] = tables[index]
	}
	return used, nil
}

// shapeQuery digests what a test could change in a schema's structure: relations and their
// columns, defaults, options and grants; functions; triggers; constraints; the schema's grants.
// Defaults name sequences with the schema; the name is cut out, so a schema renamed when another
// binary adopts it keeps its digest.
const shapeQuery = `select md5(coalesce(string_agg(x, ',' order by x), '')) from (
	select c.relname || ':' || c.relkind::text || ':' || coalesce(c.relacl::text, '') || ':' ||
	       coalesce(array_to_string(c.reloptions, ','), '') as x
	  from pg_class c where c.relnamespace = $1::regnamespace
	union all
	select c.relname || '.' || a.attname || ':' || a.atttypid::text || ':' || a.attnotnull::text || ':' ||
	       coalesce(replace(pg_get_expr(d.adbin, d.adrelid), quote_ident($1::text) || '.', ''), '')
	  from pg_attribute a join pg_class c on c.oid = a.attrelid
	  left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
	 where c.relnamespace = $1::regnamespace and a.attnum > 0 and not a.attisdropped
	union all
	select 'f:' || p.proname || ':' || coalesce(p.proacl::text, '') || ':' || md5(p.prosrc)
	  from pg_proc p where p.pronamespace = $1::regnamespace
	union all
	select 't:' || t.tgname || ':' || t.tgenabled::text
	  from pg_trigger t join pg_class c on c.oid = t.tgrelid where c.relnamespace = $1::regnamespace
	union all
	select 'c:' || conname from pg_constraint where connamespace = $1::regnamespace
	union all
	select 'n:' || coalesce(nspacl::text, '') from pg_namespace where oid = $1::regnamespace
) s`

// queryRower is a pool or a transaction.
type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
