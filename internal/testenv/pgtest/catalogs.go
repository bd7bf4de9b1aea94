package pgtest

import (
	"context"
	"time"
)

// The suite creates and drops hundreds of schemas a run, each a few hundred catalog rows, and
// every new session of a test reads those catalogs to build its caches. A server with autovacuum
// off (this machine's is) keeps every dead catalog row: after five runs pg_attribute held 550,000
// dead rows against 6,000 live, and a whole `go test ./...` took 198 s against 160 s once they
// were vacuumed. So the first binary of a run to find them past deadCatalogRows vacuums them.
// skip_locked: a binary that finds another one vacuuming goes on.
const deadCatalogRows = 100_000

const catalogVacuum = `vacuum (skip_locked) pg_catalog.pg_attribute, pg_catalog.pg_depend, pg_catalog.pg_class,
	pg_catalog.pg_index, pg_catalog.pg_type, pg_catalog.pg_attrdef, pg_catalog.pg_constraint,
	pg_catalog.pg_inherits, pg_catalog.pg_trigger, pg_catalog.pg_proc`

// vacuumCatalogsIfBloated runs catalogVacuum when the catalogs' dead rows pass deadCatalogRows.
// A role that may not vacuum them gets warnings, not errors: the tests run either way.
func vacuumCatalogsIfBloated() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var dead int64
	if err := pool.QueryRow(ctx, `select coalesce(sum(n_dead_tup), 0) from pg_stat_sys_tables
		where schemaname = 'pg_catalog' and relname in ('pg_attribute', 'pg_depend', 'pg_class')`).Scan(&dead); err != nil || dead < deadCatalogRows {
		return
	}
	_, _ = pool.Exec(ctx, catalogVacuum)
}
