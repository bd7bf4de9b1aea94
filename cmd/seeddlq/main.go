// Command seeddlq fills a DLQ stream on a NATS server with synthetic failed events, to measure
// replayctl against a server in another process (docs/benchmarks.md). It replaces the stream.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/internal/billing"
)

func main() {
	url := flag.String("nats-url", nats.DefaultURL, "NATS server")
	stream := flag.String("stream", "BENCH_DLQ", "stream to (re)create")
	n := flag.Int("n", 1_000_000, "messages")
	payload := flag.Int("payload", 256, "payload bytes (at least 32)")
	orders := flag.Bool("billing", false, "payloads are the example billing consumer's orders (-payload is ignored)")
	flag.Parse()
	if err := seed(*url, *stream, *n, max(*payload, 32), *orders); err != nil {
		fmt.Fprintln(os.Stderr, "seeddlq:", err)
		os.Exit(1)
	}
}

func seed(url, stream string, n, payload int, orders bool) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := js.DeleteStream(ctx, stream); err != nil && err != jetstream.ErrStreamNotFound {
		return err
	}
	subject := "dlq." + strings.ToLower(stream)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subject}}); err != nil {
		return err
	}
	pad := strings.Repeat("x", payload-24)
	start := time.Now()
	for i := 0; i < n; i++ {
		m := nats.NewMsg(subject)
		m.Data = fmt.Appendf(nil, `{"i":%d,"pad":"%s"}`, i, pad)
		if orders {
			m.Data, _ = json.Marshal(billing.Order{OrderID: fmt.Sprintf("ord-%d", i), Customer: fmt.Sprintf("cus_%04d", i%977),
				AmountCents: int64(500 + (i*37)%20000), Currency: "EUR"})
		}
		m.Header.Set("Event-Id", fmt.Sprintf("evt-%016x", mix(uint64(i))))
		m.Header.Set("Dlq-Reason", []string{"timeout", "http 503", "deadline exceeded"}[i%3])
		m.Header.Set("Dlq-Original-Subject", "billing.charge.requested")
		if _, err := js.PublishMsgAsync(m); err != nil {
			return err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(5 * time.Minute):
		return fmt.Errorf("publishes not acknowledged after 5 minutes")
	}
	fmt.Printf("seeded %d messages into %s in %s\n", n, stream, time.Since(start).Round(time.Millisecond))
	return nil
}

// mix is splitmix64's finaliser, a bijection: event IDs are unique but arrive in no particular
// order, like UUIDs from many producers.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
