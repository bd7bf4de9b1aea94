package ledger_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// BenchmarkSDKRoundTripsAtLedgerSize times the consumer SDK's read of an event's rows (with its
// compact tombstones) and its three writes (a live claim, the call-started mark, the completion),
// one event after another, and reports each one's p50 and p99. They go by key, so their cost must not grow with the ledger: run it on an empty
// schema (the default) and on a filled one (REPLAYCTL_BENCH_LEDGER_URL, a migrated schema filled
// through `replayctl ledger import`, docs/benchmarks.md "Sizing") and compare:
//
//	go test -run '^$' -bench SDKRoundTripsAtLedgerSize -benchtime 5000x ./ledger
//	REPLAYCTL_BENCH_LEDGER_URL='postgres://127.0.0.1/test?search_path=scale10m' go test -run '^$' -bench SDKRoundTripsAtLedgerSize -benchtime 5000x ./ledger
func BenchmarkSDKRoundTripsAtLedgerSize(b *testing.B) {
	url := os.Getenv("REPLAYCTL_BENCH_LEDGER_URL")
	if url == "" {
		url = pgtest.URL(b)
	}
	ctx := b.Context()
	store, err := ledger.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	if _, err := store.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	run := time.Now().UnixNano()
	var read, claim, mark, settle []time.Duration
	body := json.RawMessage(`{"status":"charged"}`)
	b.ResetTimer()
	for i := range b.N {
		key := ledger.EffectKey{Consumer: "billing", EventID: fmt.Sprintf("bench-%d-%09d", run, i), EffectVersion: 1}
		tr := time.Now()
		if rows, err := ledger.EffectsForEvent(ctx, store.Pool(), key.Consumer, key.EventID); err != nil || len(rows) != 0 {
			b.Fatal(rows, err)
		}
		t0 := time.Now()
		ok, err := ledger.EffectsClaim(ctx, store.Pool(), ledger.EffectClaim{Key: key, RequestHash: "sha256:x",
			RequestHashAlg: "canonical-json-v1", Owner: "bench", Lease: time.Minute, AnyVersionSettles: true})
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		t1 := time.Now()
		if ok, err := ledger.EffectsCallStarted(ctx, store.Pool(), key, "bench", 1); err != nil || !ok {
			b.Fatal(ok, err)
		}
		t2 := time.Now()
		if ok, err := ledger.EffectsComplete(ctx, store.Pool(), ledger.EffectCompletion{Key: key, Owner: "bench", ResultHash: "sha256:r",
			ResultBody: body, EffectCount: 1, ExternalRefs: json.RawMessage(`[]`)}); err != nil || !ok {
			b.Fatal(ok, err)
		}
		t3 := time.Now()
		read, claim, mark, settle = append(read, t0.Sub(tr)), append(claim, t1.Sub(t0)), append(mark, t2.Sub(t1)), append(settle, t3.Sub(t2))
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"read", read}, {"claim", claim}, {"mark", mark}, {"settle", settle}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2].Microseconds())/1000, m.name+"-p50-ms")
		b.ReportMetric(float64(m.d[len(m.d)*99/100].Microseconds())/1000, m.name+"-p99-ms")
	}
}
