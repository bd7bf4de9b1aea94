package pgtest

import (
	"testing"

	"github.com/replayctl/replayctl/ledger"
)

// A test's own pool sees what the store wrote in the test's schema, and is one pool per store,
// apart from the store's.
func TestPoolIsTheTestsOwnOnTheStoresSchema(t *testing.T) {
	store := Ledger(t)
	ctx := t.Context()
	if err := store.AuditAppend(ctx, ledger.AuditEntry{Actor: "alice", Action: "pgtest.probe"}); err != nil {
		t.Fatal(err)
	}
	db := Pool(t, store)
	if again := Pool(t, store); again != db {
		t.Error("two calls for one store opened two pools")
	}
	var n int
	if err := db.QueryRow(ctx, `select count(*) from audit where action = 'pgtest.probe'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the test's pool sees %d probe entries (%v), want the store's 1", n, err)
	}
	var app string
	if err := db.QueryRow(ctx, `select current_setting('application_name')`).Scan(&app); err != nil || app == "replayctl" {
		t.Errorf("the test's pool connects as %q (%v), as the store's does", app, err)
	}
}
