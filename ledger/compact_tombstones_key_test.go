package ledger_test

import (
	"testing"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// The SDK computes an event's tombstone key in Go and prune stores it through SQL's
// effect_tombstone_key: if the two ever differed, a late copy would not meet its compact
// tombstone and would run as a new event.
func TestTombstoneKeyInGoIsTheOneSQLStores(t *testing.T) {
	store := pgtest.Ledger(t)
	for _, tc := range []struct{ consumer, eventID string }{
		{"billing", "ord-1"}, {"billing", "ord-2"}, {"shipping", "ord-1"}, {"b", "illing\x1ford-1"},
		{"billing", "événement/ünïcode-€"}, {"billing", ""}, {"a-consumer-with-a-long-name", "2f1c9a7e-3b4d-4c5e-8f90-a1b2c3d4e5f6"},
	} {
		var inSQL int64
		if err := store.Pool().QueryRow(t.Context(), `select effect_tombstone_key($1, $2)`, tc.consumer, tc.eventID).Scan(&inSQL); err != nil {
			t.Fatal(err)
		}
		if got := ledger.TombstoneKey(tc.consumer, tc.eventID); got != inSQL {
			t.Errorf("key of (%q, %q): %d in Go, %d in SQL", tc.consumer, tc.eventID, got, inSQL)
		}
	}
}
