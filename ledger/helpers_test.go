package ledger_test

import (
	"testing"

	"github.com/replayctl/replayctl/ledger"
)

// openStore opens a store on url, closed at cleanup.
func openStore(t *testing.T, url string) *ledger.Store {
	t.Helper()
	store, err := ledger.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return store
}

// queryInt runs a single-integer query, for assertions on table contents.
func queryInt(t *testing.T, store *ledger.Store, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := store.Pool().QueryRow(t.Context(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// queryText runs a single-text query, for assertions on the catalog.
func queryText(t *testing.T, store *ledger.Store, sql string, args ...any) string {
	t.Helper()
	var s string
	if err := store.Pool().QueryRow(t.Context(), sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}
