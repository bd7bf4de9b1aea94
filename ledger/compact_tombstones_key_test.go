package ledger_test

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// The SDK computes an event's tombstone key in Go and prune stores it through SQL's
// effect_tombstone_key: if the two ever differed, a late copy would not meet its compact
// tombstone. testdata/tombstone-keys.json is the file SDKs in other languages check themselves
// with; both computations must give each of its keys.
func TestTombstoneKeysMatchTheSharedVectorsInGoAndSQL(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/tombstone-keys.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Vectors []struct {
			Consumer string `json:"consumer"`
			EventID  string `json:"eventId"`
			Key      string `json:"key"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Vectors) < 8 {
		t.Fatalf("testdata/tombstone-keys.json: %d vectors, %v", len(doc.Vectors), err)
	}
	store := pgtest.Ledger(t)
	for _, v := range doc.Vectors {
		want, err := strconv.ParseInt(v.Key, 10, 64)
		if err != nil {
			t.Fatalf("vector (%q, %q): key %q: %v", v.Consumer, v.EventID, v.Key, err)
		}
		var inSQL int64
		if err := store.Pool().QueryRow(t.Context(), `select effect_tombstone_key($1, $2)`, v.Consumer, v.EventID).Scan(&inSQL); err != nil {
			t.Fatal(err)
		}
		if got := ledger.TombstoneKey(v.Consumer, v.EventID); got != want || inSQL != want {
			t.Errorf("key of (%q, %q): %d in Go, %d in SQL, %d in the vectors", v.Consumer, v.EventID, got, inSQL, want)
		}
	}
}
