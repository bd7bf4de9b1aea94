package executor_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/benchenv"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/protocol"
)

// BenchmarkPublish measures execute's publishing (first publish to the last acknowledgement
// recorded in the ledger, no consumer running) against the floor under it measured just before in
// the same process: the DLQ read forward and each message async-published as a replay, nothing
// else. It reports both rates and their ratio; scalebench's -consumer-after-publish figure is the
// same comparison across processes, where other load on the machine moves it more.
//
//	REPLAYCTL_BENCH_TARGETS=20000 go test -run '^$' -bench Publish -benchtime 3x ./executor
func BenchmarkPublish(b *testing.B) {
	targets := benchenv.Int(b, "REPLAYCTL_BENCH_TARGETS", 20000)
	var rawRate, execRate float64
	var rawCost, execCost cost
	profiler := newBenchProfiler()
	for i := 0; i < b.N; i++ {
		// Over TCP, as an operator's execute talks to NATS: the in-process connection is a
		// synchronous pipe whose hand-offs cost what sockets do not, and spares the syscalls.
		e := exectest.New(b, exectest.Options{Restartable: true})
		m := e.Shadowed(targets, fmt.Sprintf("job-pub-%d", i))
		rawMeter := startCost(b)
		raw := rawReadPublish(b, e)
		rawRun := rawMeter.since(b)
		ctx, cancel := context.WithCancel(e.Ctx)
		// The execute side is costed from the start of its publishing to the first poll that
		// found every target recorded as published (the gates and the rest of the poll apart).
		var execMeter costMeter
		var execRun cost
		o := options(m, func(o *executor.Options) {
			o.MaxInFlight, o.Canary = targets+1, executor.NoCanary
			o.Stage = func(d string) {
				if strings.HasPrefix(d, "publishing ") {
					execMeter = startCost(b)
					profiler.start(b)
				}
			}
			// Without a consumer nothing settles: the run is stopped at the poll after the one
			// that found every target recorded as published, by when the run has taken the end
			// of its publishing (a cancel at the same poll could be taken first).
			var seen bool
			o.Progress = func(p executor.Progress) {
				if p.Published >= int64(targets) {
					if seen {
						cancel()
					} else {
						execRun = execMeter.since(b)
						profiler.stop(b)
					}
					seen = true
				}
			}
		})
		r, _ := executor.Execute(ctx, e.NATS.JS, e.Store, o)
		cancel()
		if r == nil || r.PublishRate() == 0 {
			b.Fatalf("execute did not publish every target: %+v", r)
		}
		rawRate += raw
		execRate += r.PublishRate()
		rawCost, execCost = rawCost.plus(rawRun), execCost.plus(execRun)
		rawCPU, rawAllocs, _ := rawRun.perTarget(targets)
		execCPU, execAllocs, _ := execRun.perTarget(targets)
		b.Logf("run %d: raw read + publish %.0f/s (%.1f µs CPU, %.0f allocs per target), execute %.0f/s (%.0f ms; %.1f µs CPU, %.0f allocs per target), ratio %.2f",
			i, raw, rawCPU, rawAllocs, r.PublishRate(), float64(r.PublishFinishedAt.Sub(r.PublishStartedAt).Milliseconds()), execCPU, execAllocs,
			r.PublishRate()/raw)
	}
	b.ReportMetric(rawRate/float64(b.N), "raw/s")
	b.ReportMetric(execRate/float64(b.N), "execute/s")
	b.ReportMetric(execRate/rawRate, "ratio")
	n := targets * b.N
	rawCPU, rawAllocs, rawBytes := rawCost.perTarget(n)
	execCPU, execAllocs, execBytes := execCost.perTarget(n)
	b.ReportMetric(rawCPU, "raw-cpu-µs/target")
	b.ReportMetric(execCPU, "execute-cpu-µs/target")
	b.ReportMetric(rawAllocs, "raw-allocs/target")
	b.ReportMetric(execAllocs, "execute-allocs/target")
	b.ReportMetric(rawBytes, "raw-B/target")
	b.ReportMetric(execBytes, "execute-B/target")
}

// rawReadPublish reads the whole DLQ forward and async-publishes each message as a replay to a
// stream of its own (at most 4,096 unacknowledged, as execute), and returns messages per second.
func rawReadPublish(b *testing.B, e *exectest.Env) float64 {
	b.Helper()
	const stream, subject = "BENCH_RAW", "benchraw.replay"
	if _, err := e.NATS.JS.CreateStream(e.Ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subject}, Storage: jetstream.FileStorage}); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = e.NATS.JS.DeleteStream(context.WithoutCancel(e.Ctx), stream) }()
	var failed atomic.Int64
	js, err := jetstream.New(e.NATS.Conn, jetstream.WithPublishAsyncMaxPending(4096),
		jetstream.WithPublishAsyncErrHandler(func(jetstream.JetStream, *nats.Msg, error) { failed.Add(1) }))
	if err != nil {
		b.Fatal(err)
	}
	s, err := e.NATS.JS.Stream(e.Ctx, exectest.DLQStream)
	if err != nil {
		b.Fatal(err)
	}
	total := s.CachedInfo().State.Msgs
	start := time.Now()
	c, err := s.OrderedConsumer(e.Ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	it, err := c.Messages(jetstream.PullMaxMessages(2000))
	if err != nil {
		b.Fatal(err)
	}
	defer it.Stop()
	for n := uint64(0); n < total; n++ {
		msg, err := it.Next()
		if err != nil {
			b.Fatal(err)
		}
		eventID := msg.Headers().Get("Event-Id")
		out := nats.NewMsg(subject)
		out.Data = msg.Data()
		for k, v := range map[string]string{protocol.HeaderEventID: eventID, protocol.HeaderReplayJob: "job-raw",
			protocol.HeaderReplayMode: protocol.ModeExecute, protocol.HeaderReplayEffectVersion: "2",
			protocol.HeaderReplayWriteForbidden: "false", protocol.HeaderMsgID: protocol.MsgID("job-raw", eventID)} {
			out.Header.Set(k, v)
		}
		if _, err := js.PublishMsgAsync(out, jetstream.WithStallWait(time.Minute)); err != nil {
			b.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d raw publishes failed", f)
	}
	return float64(total) / time.Since(start).Seconds()
}
