package ledger_test

import (
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

func TestOpenForHandlersSizesThePoolUnlessTheURLDoes(t *testing.T) {
	t.Parallel()
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

// TestAnSDKStoreOpensItsBatchingsConnectionsAsItStarts: opened on demand, the connections the
// batching sends on were new backends under the first messages after a start (a canary's targets
// took 420-530 ms each from claim to outcome instead of about 200). An SDK store opens as many as
// the batching uses at once, or the handlers can keep busy, when it starts; a command's store
// (no handlers) and a URL that sets pool_min_conns open none beyond the ping's.
func TestAnSDKStoreOpensItsBatchingsConnectionsAsItStarts(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	for _, c := range []struct {
		url      string
		opts     []ledger.Option
		want     int32
		describe string
	}{
		{url, []ledger.Option{ledger.ForHandlers(256)}, 4*2 + 2, "256 handlers"},
		{url, []ledger.Option{ledger.ForHandlers(3)}, 3, "3 handlers"},
		{url, nil, 0, "a command's store"},
		{url + "&pool_min_conns=1", []ledger.Option{ledger.ForHandlers(256)}, 1, "256 handlers, pool_min_conns=1"},
	} {
		store, err := ledger.Open(t.Context(), c.url, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if got := store.Pool().Config().MinConns; got != c.want {
			t.Errorf("%s: opens %d connections as it starts, want %d", c.describe, got, c.want)
		}
		// pgxpool opens them in the background; they must exist before any message asks.
		deadline := time.Now().Add(10 * time.Second)
		for store.Pool().Stat().TotalConns() < c.want && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := store.Pool().Stat().TotalConns(); got < c.want {
			t.Errorf("%s: %d connections open after 10 s, want %d", c.describe, got, c.want)
		}
		store.Close()
	}
}
