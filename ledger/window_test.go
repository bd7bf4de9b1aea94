package ledger_test

import (
	"testing"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
)

// The window's count between polls must be the full poll's settled figure, or the two would
// fight over the in-flight count.
func TestEffectsJobSettledIsTheSettledFigureOfTheJobCounts(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	execJobRows(t, store)
	full, err := store.EffectsJobCounts(t.Context(), "billing", 2, "job-c")
	if err != nil {
		t.Fatal(err)
	}
	got, err := store.EffectsJobSettled(t.Context(), "billing", 2, "job-c")
	if err != nil {
		t.Fatal(err)
	}
	if got != full.Settled() || got != 4 {
		t.Fatalf("settled %d, the job counts say %d (want 4)", got, full.Settled())
	}
	if none, err := store.EffectsJobSettled(t.Context(), "billing", 2, "job-none"); err != nil || none != 0 {
		t.Fatalf("a job without rows: %d, %v", none, err)
	}
}
