package pgtest

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/ledger"
)

// Migrating a schema costs about a third of a second of the server's time, and a whole
// `go test ./...` migrated about a hundred: a fifth of what PostgreSQL did in a run. A binary
// that exits leaves its emptied schemas behind; the next binary that needs one adopts it
// instead of migrating its own, when its tag says the same migrations made it the same day (the
// migrations make partitions from the date, so an older schema is not what a fresh migrate makes
// today). The tag is the schema's comment: "pgtest <migrations digest> <date> <shape>".

// migrationsTag is "pgtest <digest of this binary's migrations>".
var migrationsTag string

func loadMigrationsTag() error {
	digest, err := ledger.EmbeddedMigrationsDigest()
	if err != nil {
		return err
	}
	migrationsTag = "pgtest " + digest
	return nil
}

// tagMigrated records on a schema this binary just migrated what adopting it needs to know. The
// date is the server's, as adopt compares it; COMMENT takes no parameters, hence format().
func tagMigrated(ctx context.Context, schema, shape string) error {
	_, err := pool.Exec(ctx, fmt.Sprintf(`do $$ begin execute format('comment on schema %%I is %%L', %s, %s || ' ' || current_date || ' ' || %s); end $$`,
		quoteLiteral(schema), quoteLiteral(migrationsTag), quoteLiteral(shape)))
	return err
}

// serverToday is the date a tag holds, by the server's clock (tagMigrated writes current_date).
func serverToday(ctx context.Context) (string, error) {
	var today string
	err := pool.QueryRow(ctx, `select current_date::text`).Scan(&today)
	return today, err
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// orphanQuery lists the reusable schemas of binaries that exited (their owner backend is gone)
// with their tags.
const orphanQuery = `select nspname, coalesce(obj_description(oid, 'pg_namespace'), '')
  from pg_namespace
 where nspname like 'pgtest\_%\_%'
   and split_part(nspname, '_', 2) ~ '^[0-9]+$'
   and split_part(nspname, '_', 2)::int not in (select pid from pg_stat_activity)`

// orphan is a reusable schema of a binary that exited, and its tag.
type orphan struct{ Name, Tag string }

// adopt renames an orphaned schema made by the same migrations today to name, empties it and
// returns its structure; false when there is none (the caller migrates a new one).
func adopt(ctx context.Context, name string) (migrated, bool) {
	rows, err := pool.Query(ctx, orphanQuery)
	if err != nil {
		return migrated{}, false
	}
	orphans, err := pgx.CollectRows(rows, pgx.RowToStructByPos[orphan])
	if err != nil {
		return migrated{}, false
	}
	today, err := serverToday(ctx)
	if err != nil {
		return migrated{}, false
	}
	for _, o := range orphans {
		if m, ok := adoptOrphan(ctx, o, today, name); ok {
			return m, true
		}
	}
	return migrated{}, false
}

// adoptOrphan renames o to name and empties it. An orphan that cannot be adopted (another tag, a
// structure its last test changed, a session still in it) is dropped; one another binary holds
// is left to it.
func adoptOrphan(ctx context.Context, o orphan, today, name string) (migrated, bool) {
	shape, ok := strings.CutPrefix(o.Tag, migrationsTag+" "+today+" ")
	if !ok {
		dropIfUnclaimed(ctx, o.Name)
		return migrated{}, false
	}
	switch taken, err := rename(ctx, o.Name, name); {
	case err != nil:
		dropIfUnclaimed(ctx, o.Name)
		return migrated{}, false
	case !taken:
		return migrated{}, false
	}
	// The orphan's partitions are the ones its migrate made: its binary handed it on only with
	// the shape it was migrated with, and a crashed binary's extra ones fail the shape here.
	m, err := migratedOf(ctx, pool, name)
	if err != nil || m.shape != shape {
		dropIfUnclaimed(ctx, name)
		return migrated{}, false
	}
	if err := empty(ctx, name, m); err != nil {
		dropIfUnclaimed(ctx, name)
		return migrated{}, false
	}
	return m, true
}

// rename moves orphan to name, and points the functions that keep a search_path (security
// definer ones, `set search_path from current` at migrate) at the new name. False when another
// binary holds the orphan.
func rename(ctx context.Context, orphan, name string) (bool, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx) // a no-op after Commit
	var mine bool
	if err := tx.QueryRow(ctx, `select pg_try_advisory_xact_lock(hashtext($1))`, orphan).Scan(&mine); err != nil || !mine {
		return false, err
	}
	if _, err := tx.Exec(ctx, `set local lock_timeout = '2s'`); err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, "alter schema "+pgx.Identifier{orphan}.Sanitize()+" rename to "+pgx.Identifier{name}.Sanitize()); err != nil {
		return false, err
	}
	rows, err := tx.Query(ctx, `select format('alter function %s set search_path = %I', p.oid::regprocedure, $1::text)
		from pg_proc p
		where p.pronamespace = $1::regnamespace
		  and exists (select from unnest(p.proconfig) c where c like 'search\_path=%')`, name)
	if err != nil {
		return false, err
	}
	alters, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return false, err
	}
	for _, alter := range alters {
		if _, err := tx.Exec(ctx, alter); err != nil {
			return false, err
		}
	}
	return true, tx.Commit(ctx)
}
