package pgtest

import (
	"net/url"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/ledger"
)

// schemaOf reads the search_path Ledger put in a URL.
func schemaOf(t *testing.T, databaseURL string) string {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil || u.Query().Get("search_path") == "" {
		// A key=value DSN: search_path=NAME among the keywords.
		for _, kv := range strings.Fields(databaseURL) {
			if v, ok := strings.CutPrefix(kv, "search_path="); ok {
				return v
			}
		}
		t.Fatalf("no search_path in %q", databaseURL)
	}
	return u.Query().Get("search_path")
}

// The next test gets the schema an earlier one finished with, without its rows and with its
// sequences restarted; a schema whose structure a test changed is dropped, not handed on.
func TestAReusedSchemaStartsEmptyAndAChangedOneIsDropped(t *testing.T) {
	var first, second string
	t.Run("writes", func(t *testing.T) {
		store, u := LedgerWithURL(t)
		first = schemaOf(t, u)
		for range 3 {
			if err := store.AuditAppend(t.Context(), ledger.AuditEntry{Actor: "alice", Action: "pgtest.probe"}); err != nil {
				t.Fatal(err)
			}
		}
		// A failed insert advances its table's sequence and leaves the table empty.
		if _, err := Pool(t, store).Exec(t.Context(), `select nextval(pg_get_serial_sequence('approvals', 'id'))`); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("reuses and changes the structure", func(t *testing.T) {
		store, u := LedgerWithURL(t)
		second = schemaOf(t, u)
		if second != first {
			t.Fatalf("got schema %s, want %s handed on", second, first)
		}
		db := Pool(t, store)
		var n int
		if err := db.QueryRow(t.Context(), `select count(*) from audit`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("the reused schema holds %d audit entries (%v), want none", n, err)
		}
		if err := store.AuditAppend(t.Context(), ledger.AuditEntry{Actor: "alice", Action: "pgtest.probe"}); err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := db.QueryRow(t.Context(), `select max(id) from audit`).Scan(&id); err != nil || id != 1 {
			t.Fatalf("the first entry in the reused schema has id %d (%v), want 1: sequences restart", id, err)
		}
		var untouched *int64
		if err := db.QueryRow(t.Context(), `select pg_sequence_last_value(pg_get_serial_sequence('approvals', 'id')::regclass)`).Scan(&untouched); err != nil || untouched != nil {
			t.Fatalf("the sequence of the empty approvals table was left at %v (%v), want it restarted", untouched, err)
		}
		var migrations int
		if err := db.QueryRow(t.Context(), `select count(*) from replayctl_migrations`).Scan(&migrations); err != nil || migrations == 0 {
			t.Fatalf("the reused schema records %d migrations (%v); emptying must keep them", migrations, err)
		}
		if _, err := db.Exec(t.Context(), `create index audit_probe_idx on audit (actor)`); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("does not get the changed one", func(t *testing.T) {
		_, u := LedgerWithURL(t)
		if got := schemaOf(t, u); got == second {
			t.Fatalf("got schema %s again after its structure changed", got)
		}
		var exists bool
		if err := shared(t).QueryRow(t.Context(), `select exists (select from pg_namespace where nspname = $1)`, second).Scan(&exists); err != nil || exists {
			t.Fatalf("schema %s still exists (%v), want it dropped", second, err)
		}
	})
}

// Prune makes weeks ahead that migrate did not; a schema whose only change is those is handed
// on with them dropped, as migrate would have made it, where it used to be dropped whole.
func TestASchemaWithWeeksMadeAheadIsHandedOnWithoutThem(t *testing.T) {
	var first string
	var partitions int
	t.Run("makes weeks ahead", func(t *testing.T) {
		store, u := LedgerWithURL(t)
		first = schemaOf(t, u)
		db := Pool(t, store)
		if err := db.QueryRow(t.Context(), `select count(*) from pg_inherits where inhparent = 'effect_bodies'::regclass`).Scan(&partitions); err != nil {
			t.Fatal(err)
		}
		var made int
		if err := db.QueryRow(t.Context(), `select effect_bodies_ensure(now() + interval '200 days')`).Scan(&made); err != nil || made == 0 {
			t.Fatalf("effect_bodies_ensure: made %d, %v", made, err)
		}
	})
	t.Run("gets it without them", func(t *testing.T) {
		store, u := LedgerWithURL(t)
		if got := schemaOf(t, u); got != first {
			t.Fatalf("got schema %s, want %s handed on", got, first)
		}
		var now int
		if err := Pool(t, store).QueryRow(t.Context(), `select count(*) from pg_inherits where inhparent = 'effect_bodies'::regclass`).Scan(&now); err != nil || now != partitions {
			t.Fatalf("effect_bodies has %d partitions (%v), want the %d migrate made", now, err, partitions)
		}
	})
}
