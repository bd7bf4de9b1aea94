package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
)

// Run registers how long prune keeps the consumer's tombstones, so `replayctl ledger prune` keeps
// them as long as a copy of its events can arrive, not a constant of replayctl's.
func TestRunRegistersTheTombstoneRetentionPruneKeeps(t *testing.T) {
	for name, tc := range map[string]struct {
		set  time.Duration
		want int
	}{
		"declared":   {set: 30 * 24 * time.Hour, want: 30 * 86400},
		"by default": {want: 5 * 365 * 86400},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			c := e.newConsumer(func(cfg *consumer.Config) { cfg.TombstoneRetention = tc.set })
			ctx, cancel := context.WithCancel(e.ctx)
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			const registered = `select count(*) from retention_policies where kind = 'consumer' and name = 'billing'`
			for deadline := time.Now().Add(10 * time.Second); e.count(registered) == 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("Run registered no retention policy within 10 s")
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := e.count(`select tombstone_window_seconds from retention_policies where kind = 'consumer' and name = 'billing'`); got != tc.want {
				t.Errorf("registered tombstone window %d s, want %d", got, tc.want)
			}
		})
	}
}
