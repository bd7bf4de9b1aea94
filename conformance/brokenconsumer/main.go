// Command brokenconsumer is the conformance kit's deliberately broken billing consumer, so the
// kit's own tests (cmd/conformance) show that a rule fails a consumer that breaks it. -break picks
// the breakage:
//
//   - naive: the service as a hand-written replay script would be, without the SDK: it charges
//     every message it gets, keeps no ledger row, answers shadow requests by charging for real and
//     drops what it cannot parse. Every rule must fail.
//   - double-charge: the SDK's billing consumer whose handler charges a second time outside the
//     recorded call: duplicate-delivery's one external call is broken.
//   - shadow-calls: the SDK's billing consumer whose handler calls the provider itself when
//     shadowed: shadow-no-call-no-row is broken.
//   - unmarked-call: the SDK's billing consumer whose handler charges first and tells the SDK
//     about the call afterwards, so the call is in flight before its start is in the ledger:
//     kill-mid-call-uncertain is broken.
//   - plaintext-results: the SDK's billing consumer that ignores the keyring it was given
//     (REPLAYCTL_RESULT_KEYRING) and stores its receipts as they are: sealed-result-body is broken.
//   - no-reconcile-worker: the SDK's billing consumer whose reconcile worker waits a day before
//     it asks about an uncertain row, whatever the kit says: reconcile-worker is broken.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/conformance"
	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
	"github.com/replayctl/replayctl/seal"
)

func main() {
	mode := flag.String("break", "naive", "the breakage: naive, double-charge, shadow-calls, unmarked-call, plaintext-results or no-reconcile-worker")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch *mode {
	case "naive":
		err = withService(ctx, naive)
	case "double-charge", "shadow-calls", "unmarked-call", "plaintext-results", "no-reconcile-worker":
		err = withService(ctx, func(ctx context.Context, s service) error { return withSDK(ctx, s, *mode) })
	default:
		err = fmt.Errorf("-break %q: use naive, double-charge, shadow-calls, unmarked-call, plaintext-results or no-reconcile-worker", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "brokenconsumer:", err)
		os.Exit(1)
	}
}

// service is what every breakage runs on: the provider's records and the NATS connection the kit
// gave it (DATABASE_URL, NATS_URL).
type service struct {
	records  *billing.Records
	provider *billing.Provider
	nc       *nats.Conn
}

func withService(ctx context.Context, run func(context.Context, service) error) error {
	records, err := billing.OpenRecords(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer records.Close()
	provider := billing.NewProvider()
	provider.Records = records
	nc, err := nats.Connect(os.Getenv("NATS_URL"))
	if err != nil {
		return err
	}
	defer nc.Close()
	return run(ctx, service{records: records, provider: provider, nc: nc})
}

func naive(ctx context.Context, s service) error {
	provider, nc := s.provider, s.nc
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	charge := func(data []byte) error {
		var o billing.Order
		if err := json.Unmarshal(data, &o); err != nil {
			return err
		}
		_, err := provider.Charge(ctx, o.OrderID, o.AmountCents, o.Currency)
		return err
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, conformance.Stream, jetstream.ConsumerConfig{
		Durable: conformance.ConsumerName, FilterSubject: conformance.LiveSubject, AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		return err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		_ = charge(m.Data())
		_ = m.Ack()
	})
	if err != nil {
		return err
	}
	defer cc.Stop()
	sub, err := nc.QueueSubscribe(protocol.ShadowSubject(conformance.ConsumerName), "replayctl-shadow", func(m *nats.Msg) {
		_ = charge(m.Data)
		_ = m.Respond([]byte(`{"status":"ok"}`))
	})
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	fmt.Fprintln(os.Stderr, "brokenconsumer: answering shadow requests; Ctrl-C stops")
	<-ctx.Done()
	return nil
}

// withSDK runs the billing consumer on the SDK, as examples/billing does, with its handler broken
// as mode says.
func withSDK(ctx context.Context, s service, mode string) error {
	store, err := ledger.Open(ctx, os.Getenv("DATABASE_URL"), ledger.ForHandlers(64))
	if err != nil {
		return err
	}
	defer store.Close()
	provider, nc := s.provider, s.nc
	orders := billing.SharedOrders(s.records)
	handler := orders.Record(billing.Handler(provider, time.Now))
	chargeThenMark := orders.Record(func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		var o billing.Order
		_ = json.Unmarshal(ev.Payload, &o)
		if o.Currency == "" {
			return consumer.Result{}, consumer.Business(errors.New("order has no currency"))
		}
		charge, err := provider.Charge(ctx, o.OrderID, o.AmountCents, o.Currency)
		if err != nil {
			return consumer.Result{}, err
		}
		_, err = fx.Call(ctx, billing.EffectCharge, billing.TargetCharge, func(context.Context) (string, error) { return charge, nil })
		return consumer.Result{Body: map[string]string{"charge": charge}}, err
	})
	broken := func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		var o billing.Order
		_ = json.Unmarshal(ev.Payload, &o)
		if mode == "unmarked-call" && ev.Mode != consumer.ModeShadow {
			return chargeThenMark(ctx, ev, fx)
		}
		switch {
		case mode == "double-charge" && ev.Mode != consumer.ModeShadow,
			mode == "shadow-calls" && ev.Mode == consumer.ModeShadow:
			if _, err := provider.Charge(ctx, o.OrderID, o.AmountCents, o.Currency); err != nil {
				return consumer.Result{}, err
			}
		}
		return handler(ctx, ev, fx)
	}
	var resultKeyring *seal.Keyring
	if path := os.Getenv("REPLAYCTL_RESULT_KEYRING"); path != "" && mode != "plaintext-results" {
		if resultKeyring, err = seal.ReadKeyringFile(path); err != nil {
			return err
		}
	}
	reconcileAfter, _ := time.ParseDuration(os.Getenv(conformance.ReconcileAfterEnv))
	reconcileInterval, _ := time.ParseDuration(os.Getenv(conformance.ReconcileIntervalEnv))
	if mode == "no-reconcile-worker" {
		reconcileAfter = 24 * time.Hour
	}
	c, err := consumer.New(consumer.Config{ResultKeyring: resultKeyring, ReconcileAfter: reconcileAfter, ReconcileInterval: reconcileInterval, Name: conformance.ConsumerName, Store: store, Conn: nc, Stream: conformance.Stream,
		DLQSubject: conformance.DLQSubject, RetryBackoff: 100 * time.Millisecond, Handler: broken, Lookup: billing.Lookup(provider, orders)})
	if err != nil {
		return err
	}
	stopShadow, err := c.ServeShadow(ctx)
	if err != nil {
		return err
	}
	defer stopShadow()
	fmt.Fprintln(os.Stderr, "brokenconsumer: answering shadow requests; Ctrl-C stops")
	return c.Run(ctx)
}
