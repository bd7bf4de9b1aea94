package pgtest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

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
	var store *ledger.Store
	url := reusableURL(t, func(url string) { store = LedgerAt(t, url) })
	return store, url
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
	own := &ownPool{url: databaseURL}
	stores.Store(store, own)
	t.Cleanup(func() {
		stores.Delete(store)
		own.close()
	})
	if _, err := store.Migrate(ctx); err != nil {
		t.Fatalf("pgtest: migrate: %v", err)
	}
	return store
}

// stores maps each store Ledger and LedgerAt opened to its test's own pool, for Pool.
var stores sync.Map

// ownPool is opened at the first Pool call and closed with its store.
type ownPool struct {
	url  string
	mu   sync.Mutex
	pool *pgxpool.Pool
}

func (o *ownPool) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pool != nil {
		o.pool.Close()
	}
}

// Pool is a pool of the test's own on store's database and schema, for the statements a test
// runs on the ledger's tables directly: rows no command writes, assertions on table contents,
// sessions to terminate. The store keeps its own pool to itself, as in production. Every call
// for one store returns the same pool, closed with the store. store must come from Ledger,
// LedgerWithURL or LedgerAt; for any other, use PoolAt.
func Pool(t testing.TB, store *ledger.Store) *pgxpool.Pool {
	t.Helper()
	v, ok := stores.Load(store)
	if !ok {
		t.Fatal("pgtest.Pool: the store was not opened by pgtest.Ledger or LedgerAt (or its test ended); use pgtest.PoolAt with its URL")
	}
	own := v.(*ownPool)
	own.mu.Lock()
	defer own.mu.Unlock()
	if own.pool == nil {
		p, err := newPool(own.url)
		if err != nil {
			t.Fatalf("pgtest: %v", err)
		}
		own.pool = p
	}
	return own.pool
}

// PoolAt opens a pool on databaseURL, closed at cleanup.
func PoolAt(t testing.TB, databaseURL string) *pgxpool.Pool {
	t.Helper()
	p, err := newPool(databaseURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// newPool's connections are made when first used.
func newPool(databaseURL string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, err
	}
	// A test's own statements run one or two at a time; the store under test keeps the rest of
	// the server's connections.
	cfg.MaxConns = 4
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("open a pool: %w", err)
	}
	return p, nil
}
