package pgtest

import (
	"context"
	"testing"

	"github.com/replayctl/replayctl/ledger"
)

// Ledger opens a store on a fresh schema for t (see URL), migrated to the current version and
// closed at cleanup: the starting point of every test that needs a ledger.
func Ledger(t testing.TB) *ledger.Store {
	t.Helper()
	store, _ := LedgerWithURL(t)
	return store
}

// LedgerWithURL is Ledger that also returns the schema's URL, for a subprocess that must see the
// same rows.
func LedgerWithURL(t testing.TB) (*ledger.Store, string) {
	t.Helper()
	url := URL(t)
	return LedgerAt(t, url), url
}

// LedgerAt opens a store at databaseURL, migrated to the current version and closed at cleanup:
// Ledger on a database the test owns, such as a Private server's.
func LedgerAt(t testing.TB, databaseURL string) *ledger.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	store, err := ledger.Open(ctx, databaseURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(store.Close)
	if _, err := store.Migrate(ctx); err != nil {
		t.Fatalf("pgtest: migrate: %v", err)
	}
	return store
}
