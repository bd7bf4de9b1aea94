package executor_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/benchenv"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
)

// BenchmarkExecute replays a shadowed job of 5,000 targets (REPLAYCTL_BENCH_TARGETS overrides)
// through the billing consumer (the SDK, concurrency 8) on an in-process NATS server and the local
// PostgreSQL, and reports targets settled per second end to end: publish, the consumer's claim,
// handler and completion, and the executor's ledger polls. The consumer, not the publisher, bounds
// it; see docs/benchmarks.md.
//
//	go test -run '^$' -bench Execute -benchtime 3x ./executor
func BenchmarkExecute(b *testing.B) {
	targets := benchenv.Int(b, "REPLAYCTL_BENCH_TARGETS", 5000)
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := exectest.New(b, exectest.Options{})
		m := e.Shadowed(targets, fmt.Sprintf("job-bench-%d", i))
		stop := e.RunConsumer(e.NewConsumer(nil, func(c *consumer.Config) { c.Concurrency = 8 }))
		o := options(m, func(o *executor.Options) { o.MaxInFlight = 1000; o.PollInterval = 200 * time.Millisecond })
		b.StartTimer()
		start := time.Now()
		r, err := execute(e, o)
		elapsed += time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if r.Final.Completed != int64(targets) {
			b.Fatalf("completed %d of %d", r.Final.Completed, targets)
		}
		stop()
	}
	b.ReportMetric(float64(targets)*float64(b.N)/elapsed.Seconds(), "targets/s")
}
