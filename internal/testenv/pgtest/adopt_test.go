package pgtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/ledger"
)

// orphanOf migrates a schema as a binary that exited leaves it, with one audit entry in it, and
// returns it with today's date. It is named after this binary's live backend, so that no other
// binary of the suite takes it first: adoptOrphan is given it by hand.
func orphanOf(t *testing.T, tag func(shape string) string) (orphan, string) {
	t.Helper()
	ctx := t.Context()
	pool := shared(t)
	pid, err := reuseOwner(t)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("pgtest_%d_orphan%d", pid, rand.Uint32())
	if _, err := pool.Exec(ctx, "create schema "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropSchema(t, name) })
	store := LedgerAt(t, withSearchPath(base, name))
	if err := store.AuditAppend(ctx, ledger.AuditEntry{Actor: "alice", Action: "pgtest.probe"}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	m, err := migratedOf(ctx, pool, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, fmt.Sprintf("comment on schema %s is %s", pgx.Identifier{name}.Sanitize(), quoteLiteral(tag(m.shape)))); err != nil {
		t.Fatal(err)
	}
	day, err := serverToday(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return orphan{Name: name, Tag: tag(m.shape)}, day
}

func schemaExists(t *testing.T, name string) bool {
	t.Helper()
	var exists bool
	if err := shared(t).QueryRow(t.Context(), `select exists (select from pg_namespace where nspname = $1)`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	return exists
}

// A schema a binary left behind is taken by the next under its own name, empty, and its
// security-definer functions (which keep the search_path they were made with) work there.
func TestAnOrphanOfTheSameMigrationsIsAdoptedEmptyAndWorking(t *testing.T) {
	o, today := orphanOf(t, func(shape string) string { return migrationsTag + " " + today() + " " + shape })
	name := fmt.Sprintf("pgtest_adopted_%d", rand.Uint32())
	t.Cleanup(func() { dropSchema(t, name) })
	if _, ok := adoptOrphan(context.Background(), o, today, name); !ok {
		t.Fatalf("orphan %s with tag %q was not adopted", o.Name, o.Tag)
	}
	if schemaExists(t, o.Name) || !schemaExists(t, name) {
		t.Fatalf("after adoption: %s exists %v, %s exists %v; want it renamed", o.Name, schemaExists(t, o.Name), name, schemaExists(t, name))
	}
	db := PoolAt(t, withSearchPath(base, name))
	var entries int
	if err := db.QueryRow(t.Context(), `select count(*) from audit`).Scan(&entries); err != nil || entries != 0 {
		t.Fatalf("the adopted schema holds %d audit entries (%v), want none", entries, err)
	}
	// A partition made through the function lands in the adopted schema, not the orphan's name.
	var made int
	if err := db.QueryRow(t.Context(), `select effect_bodies_ensure(now() + interval '200 days')`).Scan(&made); err != nil || made == 0 {
		t.Fatalf("effect_bodies_ensure in the adopted schema: made %d, %v", made, err)
	}
}

func TestAnOrphanOfOtherMigrationsOrAnotherDayIsDropped(t *testing.T) {
	for _, tag := range []func(shape string) string{
		func(shape string) string { return "pgtest 000000000000000000000000 " + today() + " " + shape },
		func(shape string) string { return migrationsTag + " 2001-01-01 " + shape },
		func(string) string { return migrationsTag + " " + today() + " 00000000000000000000000000000000" },
	} {
		o, today := orphanOf(t, tag)
		name := fmt.Sprintf("pgtest_adopted_%d", rand.Uint32())
		t.Cleanup(func() { dropSchema(t, name) })
		if _, ok := adoptOrphan(context.Background(), o, today, name); ok {
			t.Fatalf("orphan with tag %q was adopted", o.Tag)
		}
		if schemaExists(t, o.Name) || schemaExists(t, name) {
			t.Fatalf("orphan with tag %q: %s exists %v, %s exists %v; want it dropped", o.Tag, o.Name, schemaExists(t, o.Name), name, schemaExists(t, name))
		}
	}
}

// today is the server's date as adopt reads it.
func today() string {
	d, _ := serverToday(context.Background())
	return d
}
