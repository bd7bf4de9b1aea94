package ledger_test

import (
	"testing"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

func TestOpenForHandlersSizesThePoolUnlessTheURLDoes(t *testing.T) {
	url := pgtest.URL(t)
	for _, c := range []struct {
		url      string
		handlers int
		want     int32
	}{
		{url, 32, int32(ledger.SDKPoolSize(32))},
		{url, 1, 1 + 8 + 2},
		{url + "&pool_max_conns=3", 32, 3},
	} {
		store, err := ledger.Open(t.Context(), c.url, ledger.ForHandlers(c.handlers))
		if err != nil {
			t.Fatal(err)
		}
		got := store.Pool().Config().MaxConns
		store.Close()
		if got != c.want {
			t.Errorf("%d handlers, %s: pool of %d, want %d", c.handlers, c.url, got, c.want)
		}
	}
	// The batching's connections plus a few spare, however many handlers: a pool that grew with
	// them would run PostgreSQL out of connections (max_connections 100) at 256 handlers.
	for handlers, want := range map[int]int{1: 1 + 8 + 2, 32: 8 + 8 + 2, 1024: 8 + 8 + 2} {
		if got := ledger.SDKPoolSize(handlers); got != want {
			t.Errorf("SDKPoolSize(%d) = %d, want %d", handlers, got, want)
		}
	}
}
