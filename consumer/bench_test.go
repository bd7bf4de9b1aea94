package consumer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/testenv/benchenv"
	"github.com/replayctl/replayctl/internal/testenv/natstest"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/protocol"
)

// BenchmarkRun consumes 3,000 live messages (REPLAYCTL_BENCH_EVENTS overrides) with one external
// call each, at several handler concurrencies, and reports messages/s: every message costs the
// ledger read, the claim, the call-started write and the completion.
//
//	go test -run '^$' -bench Run -benchtime 1x ./consumer
func BenchmarkRun(b *testing.B) {
	events := benchenv.Int(b, "REPLAYCTL_BENCH_EVENTS", 3000)
	for _, concurrency := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("concurrency=%d", concurrency), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				store := pgtest.Ledger(b)
				n := natstest.Start(b, false)
				if _, err := n.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
					b.Fatal(err)
				}
				for i := range events {
					msg := nats.NewMsg(orderSubject)
					msg.Data = []byte(orderJSON(fmt.Sprintf("acct-%d", i), 100+i))
					msg.Header.Set(protocol.HeaderEventID, fmt.Sprintf("e%07d", i))
					if _, err := n.JS.PublishMsgAsync(msg); err != nil {
						b.Fatal(err)
					}
				}
				<-n.JS.PublishAsyncComplete()
				p := &provider{}
				c, err := consumer.New(consumer.Config{Name: consumerName, Store: store, Conn: n.Conn, Stream: "ORDERS",
					DLQSubject: dlqSubject, Handler: chargeHandler(p), Concurrency: concurrency})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				runCtx, stop := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() { done <- c.Run(runCtx) }()
				for p.calls.Load() < int64(events) {
					time.Sleep(5 * time.Millisecond)
				}
				elapsed := time.Since(start)
				stop()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(events)/elapsed.Seconds(), "msgs/s")
				cancel()
			}
		})
	}
}
