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

// BenchmarkCallStartedRoundTrip has H handlers each record "call started" on a row of its own,
// one after another, as a handler does before each external call, and reports the latency each
// handler waits for its commit (p50, p99) and the marks committed per second, with each mark a
// statement of its own ("single", before group commit) and group-committed ("group"):
//
//	go test -run '^$' -bench CallStartedRoundTrip -benchtime 2000x ./ledger
func BenchmarkCallStartedRoundTrip(b *testing.B) {
	for _, mode := range []string{"single", "group"} {
		for _, handlers := range []int{1, 16, 32} {
			b.Run(fmt.Sprintf("%s/handlers=%d", mode, handlers), func(b *testing.B) {
				url := pgtest.URL(b)
				store, err := ledger.Open(b.Context(), url, ledger.ForHandlers(handlers))
				if err != nil {
					b.Fatal(err)
				}
				defer store.Close()
				if _, err := store.Migrate(b.Context()); err != nil {
					b.Fatal(err)
				}
				if mode == "single" {
					ledger.DisableGroupCommit(store)
				}
				keys := make([]ledger.EffectKey, handlers)
				for i := range keys {
					keys[i] = ledger.EffectKey{Consumer: "billing", EventID: fmt.Sprintf("evt-%03d", i), EffectVersion: 1}
					ok, err := ledger.EffectsClaim(b.Context(), store.Pool(), ledger.EffectClaim{Key: keys[i], RequestHash: "sha256:x",
						RequestHashAlg: "canonical-json-v1", Owner: "i-1", Lease: time.Hour})
					if err != nil || !ok {
						b.Fatal(ok, err)
					}
				}
				latencies := make([][]time.Duration, handlers)
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for h := range handlers {
					wg.Go(func() {
						for n := h; n < b.N; n += handlers {
							t0 := time.Now()
							ok, err := store.EffectsCallStarted(b.Context(), keys[h], "i-1", n+1)
							if err != nil || !ok {
								b.Error(ok, err)
								return
							}
							latencies[h] = append(latencies[h], time.Since(t0))
						}
					})
				}
				wg.Wait()
				took := time.Since(start)
				b.StopTimer()
				all := slices.Concat(latencies...)
				slices.Sort(all)
				if len(all) == 0 {
					return
				}
				b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(len(all))/took.Seconds(), "marks/s")
			})
		}
	}
}
