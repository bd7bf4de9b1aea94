package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// A tombstone past the compaction age leaves effects for its compact form, and every reader that
// looks the event up still meets it as the expired row it was: a live claim of another version is
// refused, a reopened version takes its place, and it leaves at the consumer's retention.
func TestPruneCompactsTombstonesAndALateCopyStillMeetsThem(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	seedRows(t, store,
		lifecycleRows{consumer: "billing", prefix: "c-", state: "completed", n: 3, version: 1, replayIn: "-40 days", evidenceIn: "-10 days"},
		lifecycleRows{consumer: "shipping", prefix: "c-", state: "completed", n: 2, version: 1, replayIn: "-40 days", evidenceIn: "-10 days"})
	all := ledger.PruneOptions{AllConsumers: true, Actor: "alice", CompactAfter: ledger.SuggestedCompactAfter}

	first, err := store.Prune(ctx, all)
	if err != nil || first.Total.Tombstoned != 5 || first.Total.Compacted != 0 {
		t.Fatalf("first prune %+v, %v: want 5 rows tombstoned in place, none compacted yet", first, err)
	}
	dry, err := store.PruneCount(ctx, all)
	if err != nil || dry.Total.Compacted != 5 {
		t.Fatalf("dry run before compaction %+v, %v: want the 5 tombstones counted for compaction", dry, err)
	}
	second, err := store.Prune(ctx, all)
	if err != nil || second.Total.Compacted != 5 {
		t.Fatalf("second prune %+v, %v: want the 5 tombstones compacted", second, err)
	}
	if n := queryInt(t, store, `select count(*) from effects`); n != 0 {
		t.Fatalf("%d effects rows left after compaction, want none", n)
	}
	if n := queryInt(t, store, `select count(*) from effect_tombstones`); n != 5 {
		t.Fatalf("%d compact tombstones, want 5", n)
	}

	for name, read := range map[string]func() ([]ledger.EffectRow, error){
		"the SDK's grouped read": func() ([]ledger.EffectRow, error) { return store.EffectsForEvent(ctx, "billing", "c-0001") },
		"a single read": func() ([]ledger.EffectRow, error) {
			return ledger.EffectsForEvent(ctx, store.Pool(), "billing", "c-0001")
		},
	} {
		rows, err := read()
		if err != nil || len(rows) != 1 || rows[0].State != ledger.EffectExpired || rows[0].EffectVersion != 1 || rows[0].EventID != "c-0001" {
			t.Fatalf("%s of a compacted event: %+v, %v; want its expired row under version 1", name, rows, err)
		}
	}
	if rows, err := store.EffectsForEvent(ctx, "billing", "c-0009"); err != nil || len(rows) != 0 {
		t.Fatalf("read of an event never seen: %+v, %v", rows, err)
	}

	// A version written since takes the compact tombstone's place in the read; the others stay.
	backfill := ledger.EffectClaim{Key: ledger.EffectKey{Consumer: "billing", EventID: "c-0002", EffectVersion: 2},
		RequestHash: "sha256:new", RequestHashAlg: "canonical-json-v1", Owner: "i-1", Lease: time.Minute}
	if ok, err := store.EffectsClaim(ctx, backfill); err != nil || !ok {
		t.Fatalf("a backfill claim of version 2: %v, %v; want it claimed (only its own version settles it)", ok, err)
	}
	if rows, err := store.EffectsForEvent(ctx, "billing", "c-0002"); err != nil || len(rows) != 2 ||
		rows[0].EffectVersion != 1 || rows[0].State != ledger.EffectExpired || rows[1].EffectVersion != 2 || rows[1].State != "processing" {
		t.Fatalf("read beside a new version: %+v, %v; want version 1 expired, then version 2 processing", rows, err)
	}

	if n, err := ledger.EffectsReopenExpired(ctx, store.Pool(), "billing", "c-0001", []int{1}, "not charged", "alice"); err != nil || n != 1 {
		t.Fatalf("reopen of a compact tombstone: %d, %v; want 1", n, err)
	}
	rows, err := store.EffectsForEvent(ctx, "billing", "c-0001")
	if err != nil || len(rows) != 1 || rows[0].State != "received" {
		t.Fatalf("after the reopen: %+v, %v; want the received row in the tombstone's place", rows, err)
	}

	// The reopened event settles and expires again: its version is moved a second time, and the
	// readers still meet one expired row of it.
	execSQL(t, store, `update effects set state = 'completed', evidence_until = now() - interval '10 days' where event_id = 'c-0001'`)
	for range 2 {
		if _, err := store.Prune(ctx, all); err != nil {
			t.Fatal(err)
		}
	}
	rows, err = store.EffectsForEvent(ctx, "billing", "c-0001")
	if err != nil || len(rows) != 1 || rows[0].State != ledger.EffectExpired ||
		queryInt(t, store, `select count(*) from effect_tombstones where key = effect_tombstone_key('billing', 'c-0001')`) != 2 {
		t.Fatalf("after a second move of one version: %+v, %v; want one expired row read from its two compact tombstones", rows, err)
	}

	retention := ledger.PruneOptions{Consumer: "billing", Actor: "alice", TombstoneRetention: 24 * time.Hour}
	due, err := store.PruneCount(ctx, retention)
	if err != nil || due.Total.Rows != 4 {
		t.Fatalf("dry run past billing's retention %+v, %v; want its 4 compact tombstones", due.Total, err)
	}
	gone, err := store.Prune(ctx, retention)
	if err != nil || gone.Total.Rows != 4 {
		t.Fatalf("prune past billing's retention %+v, %v; want its 4 compact tombstones deleted", gone.Total, err)
	}
	if n := queryInt(t, store, `select count(*) from effect_tombstones`); n != 2 {
		t.Errorf("%d compact tombstones left, want shipping's 2", n)
	}
}

// A prune stopped between two batches of the move loses no tombstone: every event reads as
// expired, from its whole row or its compact one, and the rerun moves the rest.
func TestACompactionStoppedBetweenBatchesLosesNoTombstone(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	seedRows(t, store, lifecycleRows{consumer: "billing", prefix: "c-", state: "completed", n: 10, version: 1,
		replayIn: "-40 days", evidenceIn: "-10 days"})
	if _, err := store.Prune(t.Context(), ledger.PruneOptions{Consumer: "billing", Actor: "alice"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	compact := ledger.PruneOptions{Consumer: "billing", Actor: "alice", BatchSize: 3, CompactAfter: ledger.SuggestedCompactAfter}
	stop := compact
	stop.Progress = func(done, total int64) { cancel() }
	r, err := store.Prune(ctx, stop)
	if !errors.Is(err, context.Canceled) || r.Total.Compacted != 3 {
		t.Fatalf("compaction cancelled after its first batch: %+v, %v; want 3 moved and context.Canceled", r.Total, err)
	}
	expiredReads := func() int {
		n := 0
		for i := 1; i <= 10; i++ {
			rows, err := store.EffectsForEvent(t.Context(), "billing", fmt.Sprintf("c-%04d", i))
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) == 1 && rows[0].State == ledger.EffectExpired {
				n++
			}
		}
		return n
	}
	if n := expiredReads(); n != 10 {
		t.Fatalf("%d of 10 events read as expired after the interruption, want all", n)
	}
	if r, err := store.Prune(t.Context(), compact); err != nil || r.Total.Compacted != 7 {
		t.Fatalf("rerun %+v, %v: want the other 7 moved", r, err)
	}
	if n := expiredReads(); n != 10 || queryInt(t, store, `select count(*) from effects`) != 0 {
		t.Fatalf("after the rerun: %d of 10 read as expired, effects rows left %d", n, queryInt(t, store, `select count(*) from effects`))
	}
}
