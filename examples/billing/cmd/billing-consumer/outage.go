package main

import (
	"fmt"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/billing"
)

// outageReason is the Dlq-Reason of a charge that failed in a simulated outage: what
// `plan --failure-match unavailable` selects.
const outageReason = "payment provider unavailable"

// outage makes every charge fail, before the provider acts, until start+d: a live outage from
// real traffic, for the tutorial (docs/tutorial.md), instead of hand-seeded DLQ messages. The
// provider refuses the connection, which proves the call did not run, so the SDK retries the
// message and after MaxDeliver deliveries dead-letters it; a failure that might have charged
// would end uncertain instead, never replayed. Receipts are not affected; d <= 0 is no outage.
func outage(start time.Time, d time.Duration, now func() time.Time) func(kind, ref string) error {
	if d <= 0 {
		return nil
	}
	until := start.Add(d)
	return func(kind, ref string) error {
		if kind != billing.EffectCharge || !now().Before(until) {
			return nil
		}
		return consumer.WithReasonClass(outageReason,
			fmt.Errorf("charge %s: %w (simulated outage until %s)", ref, billing.ErrConnectRefused, until.UTC().Format(time.RFC3339)))
	}
}
