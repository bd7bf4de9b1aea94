package main

import (
	"errors"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/billing"
)

// During -fail-charges-until every charge fails as not executed (so it is retried and
// dead-lettered, never left uncertain), receipts go through, and after it charges succeed.
func TestOutageFailsChargesAsNotExecutedUntilItEnds(t *testing.T) {
	start := time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC)
	now := start
	fail := outage(start, 20*time.Second, func() time.Time { return now })
	// billing's handler marks a refused connection not executed: the call provably did not run.
	err := fail(billing.EffectCharge, "ord-1")
	if !errors.Is(err, billing.ErrConnectRefused) {
		t.Fatalf("charge during the outage: %v; want a refused connection", err)
	}
	if err := fail(billing.EffectReceipt, "ord-1"); err != nil {
		t.Errorf("receipt during the outage: %v; want it to go through", err)
	}
	now = start.Add(20 * time.Second)
	if err := fail(billing.EffectCharge, "ord-2"); err != nil {
		t.Errorf("charge after the outage: %v", err)
	}
	if outage(start, 0, time.Now) != nil {
		t.Error("-fail-charges-until 0 simulated an outage")
	}
}
