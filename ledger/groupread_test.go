package ledger_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

func TestConcurrentReadsOfEventsGoOutAsOneQueryAndEachGetsItsOwnRows(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	// evt-000 has rows under versions 2 and 1 (written in that order), evt-001..evt-009 one row
	// each, evt-010.. none.
	if _, err := store.Pool().Exec(t.Context(), `insert into effects (consumer, event_id, effect_version, state, request_hash, request_hash_alg)
		values ('billing', 'evt-000', 2, 'received', 'sha256:x', 'canonical-json-v1'),
		       ('billing', 'evt-000', 1, 'received', 'sha256:x', 'canonical-json-v1')`); err != nil {
		t.Fatal(err)
	}
	var claimedKeys []ledger.EffectKey
	for _, k := range claimed(t, store, 10, "i-1") {
		if k.EventID != "evt-000" {
			claimedKeys = append(claimedKeys, k)
		}
	}
	// A row of another consumer under the same event ID is never anyone's answer here.
	if _, err := store.Pool().Exec(t.Context(), `insert into effects (consumer, event_id, effect_version, state, request_hash, request_hash_alg)
		values ('shipping', 'evt-003', 1, 'received', 'sha256:y', 'canonical-json-v1')`); err != nil {
		t.Fatal(err)
	}

	gate, holding := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var sizes []int
	var mu sync.Mutex
	ledger.HoldEventReads(store, func(n int) {
		mu.Lock()
		sizes = append(sizes, n)
		mu.Unlock()
		once.Do(func() { close(holding); <-gate })
	})
	const n = 40
	// Caller i reads evt-(i mod 15): evt-000 several times, and events with no row.
	event := func(i int) string { return fmt.Sprintf("evt-%03d", i%15) }
	got := make([][]ledger.EffectRow, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Go(func() { got[0], errs[0] = store.EffectsForEvent(t.Context(), "billing", event(0)) })
	<-holding
	for i := 1; i < n; i++ {
		wg.Go(func() { got[i], errs[i] = store.EffectsForEvent(t.Context(), "billing", event(i)) })
	}
	deadline := time.Now().Add(10 * time.Second)
	for ledger.EventReadsPending(store) < n-1 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d reads queued", ledger.EventReadsPending(store), n-1)
		}
		time.Sleep(time.Millisecond)
	}
	close(gate)
	wg.Wait()

	if !slices.Equal(sizes, []int{1, n - 1}) {
		t.Errorf("reads went out as queries of %v events, want [1 %d] (the held one, then the queued ones together)", sizes, n-1)
	}
	hasRow := map[string]bool{"evt-000": true}
	for _, k := range claimedKeys {
		hasRow[k.EventID] = true
	}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("read %d (%s): %v", i, event(i), errs[i])
		}
		var versions []int
		for _, r := range got[i] {
			if r.Consumer != "billing" || r.EventID != event(i) {
				t.Errorf("read %d of %s got a row of %s %s", i, event(i), r.Consumer, r.EventID)
			}
			versions = append(versions, r.EffectVersion)
		}
		want := []int(nil)
		switch {
		case event(i) == "evt-000":
			want = []int{1, 2}
		case hasRow[event(i)]:
			want = []int{1}
		}
		if !slices.Equal(versions, want) {
			t.Errorf("read %d of %s got versions %v, want %v", i, event(i), versions, want)
		}
	}
	// Each caller owns its slice: one changing its rows does not change another's.
	if len(got[0]) > 0 && len(got[15]) > 0 {
		got[0][0].State = "changed"
		if got[15][0].State == "changed" {
			t.Error("two callers of one event share a slice")
		}
	}
	if st := store.GroupCommitStats(); st.ReadStatements != 2 || st.ReadEvents != n || st.ReadTime <= 0 {
		t.Errorf("stats say %d read queries for %d events taking %s, want 2 for %d taking some time", st.ReadStatements, st.ReadEvents, st.ReadTime, n)
	}
}
