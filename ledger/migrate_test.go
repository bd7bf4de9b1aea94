package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// ledgerTables counts replayctl's tables in the store's current schema.
const ledgerTables = `
select count(*) from pg_tables
 where schemaname = current_schema()
   and tablename in ('replayctl_migrations', 'effects', 'effect_versions', 'jobs', 'job_targets', 'audit', 'shadow_verdicts')`

// allMigrations are the embedded migrations in order; a new one is added here too.
var allMigrations = []string{"0001_init", "0002_consumer_and_shadow", "0003_execute", "0004_reconcile", "0005_lifecycle", "0006_job_targets_fillfactor",
	"0007_expired_tombstones", "0008_fingerprint_algorithms", "0009_delivery_counts", "0010_plan_bounds", "0011_shadow_failures", "0014_shadow_refused", "0015_job_manifests",
	"0020_job_pace", "0022_effects_completed_by", "0023_effects_fillfactor", "0024_api_keys", "0025_api_keys_resolution_case", "0026_approvals", "0027_ledger_identity", "0028_dead_letter_refused", "0029_audit_chain", "0030_approvals_audited", "0031_history_import", "0032_signed_approvals", "0033_effect_bodies", "0034_prune_by_date", "0035_compact_tombstones", "0036_api_keys_prune_by_date", "0037_api_key_daily_partitions", "0038_api_key_compact_tombstones"}

// latestVersion is the last migration's number: numbers are reserved per change, so gaps are fine.
var latestVersion = func() int {
	var n int
	if _, err := fmt.Sscanf(allMigrations[len(allMigrations)-1], "%04d_", &n); err != nil {
		panic(err)
	}
	return n
}()

func TestMigrateTwice(t *testing.T) {
	t.Parallel()
	store := openStore(t, pgtest.URL(t))
	first, err := store.Migrate(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first.Applied, allMigrations) || first.Version != latestVersion {
		t.Fatalf("first run %+v, want Applied %v Version %d", first, allMigrations, latestVersion)
	}
	second, err := store.Migrate(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Applied) != 0 || second.Version != latestVersion {
		t.Fatalf("second run %+v, want nothing applied at version %d", second, latestVersion)
	}
	var version int
	var name string
	if err := store.Pool().QueryRow(t.Context(), "select version, name from replayctl_migrations order by version limit 1").Scan(&version, &name); err != nil {
		t.Fatal(err)
	}
	if version != 1 || name != "0001_init" {
		t.Errorf("first recorded migration %d %q", version, name)
	}
}

func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	const runs = 4
	stores := make([]*ledger.Store, runs)
	for i := range stores {
		stores[i] = openStore(t, url)
	}
	results := make([]ledger.MigrateResult, runs)
	errs := make([]error, runs)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			<-start
			results[i], errs[i] = stores[i].Migrate(t.Context())
		})
	}
	close(start)
	wg.Wait()

	appliedBy := 0
	for i := range runs {
		if errs[i] != nil {
			t.Fatalf("run %d: %v", i, errs[i])
		}
		if results[i].Version != latestVersion {
			t.Errorf("run %d: version %d, want %d", i, results[i].Version, latestVersion)
		}
		switch {
		case slices.Equal(results[i].Applied, allMigrations):
			appliedBy++
		case len(results[i].Applied) != 0:
			t.Errorf("run %d applied %v", i, results[i].Applied)
		}
	}
	if appliedBy != 1 {
		t.Errorf("%d runs applied the migrations, want exactly 1", appliedBy)
	}
	if n := queryInt(t, stores[0], "select count(*) from replayctl_migrations"); n != len(allMigrations) {
		t.Errorf("replayctl_migrations has %d rows, want %d", n, len(allMigrations))
	}
	if n := queryInt(t, stores[0], ledgerTables); n != 7 {
		t.Errorf("%d ledger tables in the schema, want 7", n)
	}
}

func TestMigrateWaitsOnlyForItsOwnSchema(t *testing.T) {
	t.Parallel()
	busy := openStore(t, pgtest.URL(t))
	other := openStore(t, pgtest.URL(t))

	// Hold busy's migration lock the way a second replayctl migrate would.
	holder, err := busy.Pool().Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(t.Context(), "select pg_advisory_lock(hashtext('replayctl.migrate.' || current_schema()))"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if res, err := other.Migrate(ctx); err != nil || res.Version != latestVersion {
		t.Fatalf("migrate another schema while the lock is held: %+v, %v", res, err)
	}

	short, cancelShort := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancelShort()
	if _, err := busy.Migrate(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("migrate while another run holds the lock: %v, want a deadline error", err)
	}
	if n := queryInt(t, busy, ledgerTables); n != 0 {
		t.Fatalf("%d ledger tables created without the lock", n)
	}

	if _, err := holder.Exec(t.Context(), "select pg_advisory_unlock(hashtext('replayctl.migrate.' || current_schema()))"); err != nil {
		t.Fatal(err)
	}
	if res, err := busy.Migrate(t.Context()); err != nil || !slices.Equal(res.Applied, allMigrations) {
		t.Fatalf("migrate after the lock was released: %+v, %v", res, err)
	}
}

func TestMigrateWithoutSchema(t *testing.T) {
	t.Parallel()
	store := openStore(t, pgtest.URL(t)+"&search_path=replayctl_no_such_schema")
	_, err := store.Migrate(t.Context())
	if err == nil || err.Error() != "migrate: the search_path names no existing schema; create the schema or fix search_path in --database-url" {
		t.Fatalf("err = %v", err)
	}
}

func TestCheckSchema(t *testing.T) {
	t.Parallel()
	store := openStore(t, pgtest.URL(t))
	current, wanted, err := store.SchemaVersion(t.Context())
	if err != nil || current != 0 || wanted != latestVersion {
		t.Fatalf("SchemaVersion before migrate = %d, %d, %v; want 0, %d, nil", current, wanted, err, latestVersion)
	}
	err = store.CheckSchema(t.Context())
	if !errors.Is(err, ledger.ErrSchemaOutdated) {
		t.Fatalf("CheckSchema before migrate = %v, want ErrSchemaOutdated", err)
	}
	if want := fmt.Sprintf("ledger schema is at version 0, this replayctl needs %d: run `replayctl migrate`", latestVersion); err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}

	if _, err := store.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := store.CheckSchema(t.Context()); err != nil {
		t.Fatalf("CheckSchema after migrate = %v", err)
	}

	if _, err := store.Pool().Exec(t.Context(), "insert into replayctl_migrations (version, name) values (9999, '9999_future')"); err != nil {
		t.Fatal(err)
	}
	err = store.CheckSchema(t.Context())
	if want := fmt.Sprintf("ledger schema is at version 9999, newer than this replayctl knows (%d): upgrade replayctl", latestVersion); !errors.Is(err, ledger.ErrSchemaOutdated) || err.Error() != want {
		t.Errorf("CheckSchema on a newer schema = %v, want %q", err, want)
	}
}

// Migration numbers have gaps; a schema at the wanted maximum that lacks an earlier migration is
// outdated, and the error names what is missing.
func TestCheckSchemaNamesAMissingEarlierMigration(t *testing.T) {
	t.Parallel()
	store := openStore(t, pgtest.URL(t))
	if _, err := store.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pool().Exec(t.Context(), "delete from replayctl_migrations where version = 1"); err != nil {
		t.Fatal(err)
	}
	err := store.CheckSchema(t.Context())
	if !errors.Is(err, ledger.ErrSchemaOutdated) || !strings.Contains(err.Error(), "lacks migrations 0001_init: run `replayctl migrate`") {
		t.Fatalf("CheckSchema with 0001 unrecorded = %v, want ErrSchemaOutdated naming 0001_init", err)
	}
}
