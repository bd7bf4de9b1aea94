package shadow_test

import (
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/internal/testenv/benchenv"
	"github.com/replayctl/replayctl/shadow"
)

// BenchmarkShadow shadows a job of 20,000 targets (REPLAYCTL_BENCH_TARGETS overrides) against an
// in-process responder and reports targets/s and the peak live heap the runs add, which must not
// grow with the number of targets: the pass holds one page of targets and one consumer batch at a
// time.
//
//	go test -run '^$' -bench Shadow -benchtime 3x ./shadow
func BenchmarkShadow(b *testing.B) {
	targets := benchenv.Int(b, "REPLAYCTL_BENCH_TARGETS", 20000)
	f := newFixture(b)
	for i := range targets {
		msg := nats.NewMsg("dlq.billing")
		msg.Data = []byte(payloadOf(charge{AmountCents: 100 + i%10000, SKU: "sku-" + strconv.Itoa(i%7)}))
		msg.Header.Set("Event-Id", eventID(i))
		msg.Header.Set("Dlq-Reason", []string{"timeout", "http 503", "bad schema"}[i%3])
		msg.Header.Set("Dlq-Original-Subject", "billing.charge.requested")
		if _, err := f.env.JS.PublishMsgAsync(msg); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-f.env.JS.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("publishing the DLQ did not complete")
	}
	m := f.plan()
	f.serve(behaviour{})
	opts := f.options(m, func(o *shadow.Options) { o.Sample, o.Concurrency, o.Timeout = 100, 64, 5*time.Second })

	// The live heap (as of the last GC) is sampled during the runs; the figure reported is its peak
	// above the live heap before them, which holds the in-process NATS server, the manifest and
	// the fixture.
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	readLive := func() uint64 {
		metrics.Read(live)
		return live[0].Value.Uint64()
	}
	runtime.GC()
	base := readLive()
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if v := readLive(); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	start := time.Now()
	for b.Loop() {
		r := f.mustRun(opts)
		if r.Totals.Answered != int64(targets) {
			b.Fatalf("answered %d of %d", r.Totals.Answered, targets)
		}
	}
	elapsed := time.Since(start)
	close(stop)
	<-sampled
	b.ReportMetric(float64(targets)*float64(b.N)/elapsed.Seconds(), "targets/s")
	b.ReportMetric(float64(max(peak.Load(), base)-base)/(1<<20), "peak-live-heap-MiB")
}
