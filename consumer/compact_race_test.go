package consumer_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/protocol"
)

// Late copies of events arrive while prune moves their tombstones to the compact form, in small
// batches so the moves and the deliveries interleave: whichever form a delivery reads, whole or
// compact, it meets expired evidence and asks the look-up, and the provider is never called again.
func TestLateCopiesRacingTheCompactionOfTheirTombstonesAreNeverChargedAgain(t *testing.T) {
	e := newEnv(t)
	l := &lookups{verdict: protocol.VerdictHappened}
	c := e.newConsumer(func(cfg *consumer.Config) {
		cfg.Lookup = l.lookup
		cfg.Concurrency = 16
	})
	cons := e.durable(c)
	const n = 300
	payload := func(i int) string { return orderJSON(fmt.Sprintf("acct-%d", i), 100+i) }
	for i := range n {
		e.publish(fmt.Sprintf("late-%03d", i), payload(i), nil)
	}
	for range n {
		e.processNext(c, cons, consumer.OutcomeCompleted)
	}
	charged := e.p.calls.Load()
	// Every row past its evidence, then a prune that makes the tombstones, then dated past the
	// compaction age: the next prune moves them.
	ledgertest.EndWindows(t, e.db, 9*24*time.Hour, 8*24*time.Hour)
	if r, err := e.store.Prune(e.ctx, ledger.PruneOptions{Consumer: consumerName, Actor: "test"}); err != nil || r.Total.Tombstoned != n {
		t.Fatalf("prune: %+v, %v; want %d tombstones", r, err, n)
	}

	for i := range n {
		e.publish(fmt.Sprintf("late-%03d", i), payload(i), nil)
	}
	var wg sync.WaitGroup
	var pruned *ledger.PruneReport
	var pruneErr error
	wg.Go(func() {
		pruned, pruneErr = e.store.Prune(e.ctx, ledger.PruneOptions{Consumer: consumerName, Actor: "test", BatchSize: 7,
			CompactAfter: ledger.SuggestedCompactAfter})
	})
	// A verdict that lost its compare-and-set to the move is answered in progress and redelivered.
	outcomes := map[consumer.OutcomeKind]int{}
	for handled := 0; handled < n; {
		kind := c.Process(e.ctx, e.next(cons)).Kind
		outcomes[kind]++
		if kind != consumer.OutcomeInProgress {
			handled++
		}
	}
	wg.Wait()
	if pruneErr != nil {
		t.Fatal(pruneErr)
	}
	e.settled(cons)

	if got := e.p.calls.Load(); got != charged {
		t.Fatalf("the provider was called %d times more for late copies of settled events", got-charged)
	}
	if outcomes[consumer.OutcomeReconciled] != n {
		t.Errorf("outcomes %v: want all %d late copies reconciled by the look-up", outcomes, n)
	}
	if n := e.count(`select count(*) from effects where state = 'reconciled'`); n != 300 {
		t.Errorf("%d rows reconciled, want one per event", n)
	}
	if pruned.Total.Compacted == 0 {
		t.Logf("prune compacted none of the tombstones before the deliveries reconciled them; the race was not exercised this run")
	}
	t.Logf("prune compacted %d of %d tombstones while the late copies were handled", pruned.Total.Compacted, n)
}
