// Command billing-consumer runs the example billing consumer as a service: it answers shadow
// requests on replay.shadow.billing and, unless -shadow-only, consumes its stream with the SDK's
// ledger rules and answers `replayctl reconcile` look-ups on replay.reconcile.billing from the
// provider's charges. Its payment provider is the in-memory fake, so nothing leaves the process; the
// provider's call count is printed when it stops. It is for trying replayctl shadow by hand and
// for measuring replayctl against a responder in another process (docs/benchmarks.md).
//
//	go run ./examples/billing/cmd/billing-consumer -shadow-only -live-version 1
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/examples/billing"
	"github.com/replayctl/replayctl/internal/natsurl"
	"github.com/replayctl/replayctl/ledger"
)

func main() {
	dbURL := flag.String("database-url", firstNonEmpty(os.Getenv("REPLAYCTL_DATABASE_URL"), os.Getenv("DATABASE_URL"),
		"postgres:///test?host=/var/run/postgresql"), "PostgreSQL URL of the ledger")
	natsURL := flag.String("nats-url", firstNonEmpty(os.Getenv("NATS_URL"), nats.DefaultURL), "NATS server URL")
	stream := flag.String("stream", "BILLING", "stream of live and replayed charge requests")
	dlqSubject := flag.String("dlq-subject", "dlq.billing.charge", "subject of the DLQ stream poison messages go to")
	liveVersion := flag.Int("live-version", 1, "effect version of live messages (2 has the fee fix)")
	shadowOnly := flag.Bool("shadow-only", false, "answer shadow requests only; do not consume the stream")
	concurrency := flag.Int("concurrency", 32, "shadow requests handled at once")
	handlers := flag.Int("handlers", 8, "stream messages handled at once")
	createStream := flag.Bool("create-stream", false, "create -stream on billing.> if it does not exist")
	flag.Parse()
	if err := run(*dbURL, *natsURL, *stream, *dlqSubject, *liveVersion, *shadowOnly, *concurrency, *handlers, *createStream); err != nil {
		fmt.Fprintln(os.Stderr, "billing-consumer:", err)
		os.Exit(1)
	}
}

func run(dbURL, natsURL, stream, dlqSubject string, liveVersion int, shadowOnly bool, concurrency, handlers int, createStream bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	store, err := ledger.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	defer store.Close()
	nc, err := nats.Connect(natsURL, nats.Name("billing-consumer"))
	if err != nil {
		return fmt.Errorf("connect to NATS at %s: %w", natsurl.Redact(natsURL), natsurl.ScrubError(err, natsURL))
	}
	defer nc.Close()
	if createStream {
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"billing.>"}})
		if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("create stream %s: %w", stream, err)
		}
	}
	provider := billing.NewProvider()
	orders := billing.NewOrders()
	c, err := consumer.New(consumer.Config{
		Name: "billing", Store: store, Conn: nc, Stream: stream, DLQSubject: dlqSubject,
		LiveVersion: liveVersion, ShadowConcurrency: concurrency, Concurrency: handlers,
		Handler: orders.Record(billing.Handler(provider, time.Now)),
		Lookup:  billing.Lookup(provider, orders),
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	stopShadow, err := c.ServeShadow(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "billing-consumer: answering shadow requests on replay.shadow.billing; Ctrl-C stops")
	if shadowOnly {
		<-ctx.Done()
	} else if err := c.Run(ctx); err != nil {
		return err
	}
	stopShadow()
	fmt.Fprintf(os.Stderr, "billing-consumer: stopped; the payment provider received %d calls\n", provider.Calls(""))
	return nil
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
