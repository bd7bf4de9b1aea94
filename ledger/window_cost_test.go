package ledger_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// TestWindowRecountCost times the window's re-count against the poll's full counts on a large
// job (docs/decisions.md, "A fleet's in-flight window"). A measurement, so it runs only when
// asked: REPLAYCTL_WINDOW_COST=1 go test -count=1 ./ledger -run TestWindowRecountCost -v
func TestWindowRecountCost(t *testing.T) {
	t.Parallel()
	if os.Getenv("REPLAYCTL_WINDOW_COST") == "" {
		t.Skip("a measurement: set REPLAYCTL_WINDOW_COST=1 to run it")
	}
	store := pgtest.Ledger(t)
	const n = 200_000
	rows := make([]ledger.EffectRow, 0, 10_000)
	for i := range n {
		state := "completed"
		if i%10 == 0 {
			state = "processing"
		}
		rows = append(rows, execEffect(fmt.Sprintf("evt-%07d", i), 2, state, "job-big"))
		if len(rows) == cap(rows) {
			execImport(t, store, rows...)
			rows = rows[:0]
		}
	}
	execSQL(t, store, "analyze effects")
	var settled, full time.Duration
	const rounds = 10
	for range rounds {
		began := time.Now()
		got, err := store.EffectsJobSettled(t.Context(), "billing", 2, "job-big")
		if err != nil || got != n-n/10 {
			t.Fatalf("settled %d, %v; want %d", got, err, n-n/10)
		}
		settled += time.Since(began)
		began = time.Now()
		if _, err := store.EffectsJobCounts(t.Context(), "billing", 2, "job-big"); err != nil {
			t.Fatal(err)
		}
		full += time.Since(began)
	}
	t.Logf("%d rows: EffectsJobSettled %s, EffectsJobCounts %s (mean of %d)", n, settled/rounds, full/rounds, rounds)
}
