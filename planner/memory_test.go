package planner_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/internal/testenv/benchenv"
	"github.com/replayctl/replayctl/internal/testenv/slowtest"
	"github.com/replayctl/replayctl/planner"
)

// largeDLQ publishes n messages with payloadSize-byte payloads to the fixture's stream.
func (f *fixture) largeDLQ(tb testing.TB, n, payloadSize int) {
	tb.Helper()
	filler := strings.Repeat("x", payloadSize-40)
	acks := make([]jetstream.PubAckFuture, 0, 4000)
	flush := func() {
		for _, a := range acks {
			select {
			case <-a.Ok():
			case err := <-a.Err():
				tb.Fatal(err)
			}
		}
		acks = acks[:0]
	}
	for i := 0; i < n; i++ {
		msg := nats.NewMsg("dlq.billing")
		msg.Data = []byte(fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, filler))
		msg.Header.Set("Event-Id", fmt.Sprintf("evt-%07d", i))
		msg.Header.Set("Dlq-Reason", []string{"timeout", "http 503", "deadline exceeded"}[i%3])
		msg.Header.Set("Dlq-Original-Subject", "billing.charge.requested")
		a, err := f.js.PublishMsgAsync(msg)
		if err != nil {
			tb.Fatal(err)
		}
		if acks = append(acks, a); len(acks) == cap(acks) {
			flush()
		}
	}
	flush()
}

// peakHeap samples the live heap while fn runs and returns the peak above the heap before it.
func peakHeap(fn func()) (peakAbove uint64) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if v := read(); v > peak {
				peak = v
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	if peak < base {
		return 0
	}
	return peak - base
}

// TestPlanMemoryIsBounded plans a 200,000-message DLQ whose payloads total about 200 MiB and
// requires the plan's heap to stay far below that: the scan streams into COPY and only the target IDs
// are held, for the manifest.
func TestPlanMemoryIsBounded(t *testing.T) {
	slowtest.Require(t)
	if testing.Short() {
		t.Skip("seeds 200,000 messages")
	}
	const n, payloadSize = 200_000, 1024
	f := newFixture(t)
	f.largeDLQ(t, n, payloadSize)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var targets int64
	var planErr error
	start := time.Now()
	peak := peakHeap(func() {
		res, err := planner.Plan(ctx, f.js, f.store, f.options(func(o *planner.Options) { o.OutputPath = filepath.Join(f.dir, "big.json") }))
		if planErr = err; err == nil {
			targets = res.Manifest.Stats.Targets
		}
	})
	if planErr != nil {
		t.Fatal(planErr)
	}
	t.Logf("planned %d messages (%d MiB of payload) in %s, peak heap above baseline %.1f MiB",
		n, n*payloadSize>>20, time.Since(start).Round(time.Millisecond), float64(peak)/(1<<20))
	if targets != n {
		t.Fatalf("targets %d, want %d", targets, n)
	}
	const limit = 96 << 20
	if peak > limit {
		t.Fatalf("peak heap %.1f MiB above baseline while planning, want under %d MiB: the scan is holding messages", float64(peak)/(1<<20), limit>>20)
	}
}

// BenchmarkPlan plans a DLQ of REPLAYCTL_BENCH_EVENTS messages (default 200,000) with
// REPLAYCTL_BENCH_PAYLOAD-byte payloads (default 1,024) and reports messages/s and the peak heap
// above baseline. Seeding is outside the timer. See docs/benchmarks.md.
func BenchmarkPlan(b *testing.B) {
	n, payloadSize := benchenv.Int(b, "REPLAYCTL_BENCH_EVENTS", 200_000), benchenv.Int(b, "REPLAYCTL_BENCH_PAYLOAD", 1024)
	f := newFixture(b)
	f.largeDLQ(b, n, payloadSize)
	b.ResetTimer()
	var peak uint64
	for i := 0; i < b.N; i++ {
		p := peakHeap(func() {
			_, err := planner.Plan(f.ctx, f.js, f.store, f.options(func(o *planner.Options) {
				o.OutputPath = filepath.Join(f.dir, fmt.Sprintf("bench-%d.json", i))
			}))
			if err != nil {
				b.Fatal(err)
			}
		})
		peak = max(peak, p)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}
