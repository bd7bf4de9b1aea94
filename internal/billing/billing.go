// Package billing is an example consumer built on the replayctl consumer SDK, used by the tests and
// by `replayctl demo`. It charges an order through a payment provider and mails a receipt: two
// external effects per event.
//
// Effect version 1 has a bug: it truncates the card fee instead of rounding it, undercharging
// about half of all orders by a cent. Effect version 2 fixes it, so a shadow of a replay under
// version 2 shows feeCents changed for exactly those orders, and processedAt (a timestamp) as noise.
package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/replayctl/replayctl/consumer"
)

// Effect kinds and targets of the billing consumer, as recorded in the ledger and shadow replies.
const (
	EffectCharge  = "payments.charge"
	TargetCharge  = "payments-api"
	EffectReceipt = "email.receipt"
	TargetReceipt = "mailer"
)

// FixedVersion is the first effect version that rounds the fee correctly.
const FixedVersion = 2

// feePerMille is the card fee: 2.9 %.
const feePerMille = 29

// Order is the event payload.
type Order struct {
	OrderID     string `json:"orderId"`
	Customer    string `json:"customer"`
	AmountCents int64  `json:"amountCents"`
	Currency    string `json:"currency"`
}

// Receipt is the handler's result, stored in the ledger as the event's result body.
type Receipt struct {
	Status      string `json:"status"`
	OrderID     string `json:"orderId"`
	AmountCents int64  `json:"amountCents"`
	FeeCents    int64  `json:"feeCents"`
	TotalCents  int64  `json:"totalCents"`
	Currency    string `json:"currency"`
	ProcessedAt string `json:"processedAt"`
}

// FeeCents is the fee on amount under effect version: truncated before FixedVersion (the bug),
// rounded half up from it.
func FeeCents(amountCents int64, version int) int64 {
	if version < FixedVersion {
		return amountCents * feePerMille / 1000
	}
	return (amountCents*feePerMille + 500) / 1000
}

// ReceiptFor is the result of charging o under version at the time at; the handler and the demo's
// seeded history use it, so the seeded originals are what version 1 really produced.
func ReceiptFor(o Order, version int, at time.Time) Receipt {
	fee := FeeCents(o.AmountCents, version)
	return Receipt{
		Status: "charged", OrderID: o.OrderID, AmountCents: o.AmountCents, FeeCents: fee,
		TotalCents: o.AmountCents + fee, Currency: o.Currency, ProcessedAt: at.UTC().Format(time.RFC3339Nano),
	}
}

// Handler returns the billing consumer's handler, charging through p. now stamps processedAt.
func Handler(p *Provider, now func() time.Time) consumer.Handler {
	return func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		var o Order
		if err := json.Unmarshal(ev.Payload, &o); err != nil {
			return consumer.Result{}, consumer.Business(fmt.Errorf("payload is not an order: %w", err))
		}
		if o.Currency == "" {
			return consumer.Result{}, consumer.Business(errors.New("order has no currency"))
		}
		receipt := ReceiptFor(o, ev.EffectVersion, now())
		if _, err := fx.Call(ctx, EffectCharge, TargetCharge, func(ctx context.Context) (string, error) {
			return markNotExecuted(p.Charge(ctx, o.OrderID, receipt.TotalCents, o.Currency))
		}); err != nil {
			if errors.Is(err, ErrInvalidRequest) {
				// Retrying a request the provider refused as invalid cannot succeed.
				return consumer.Result{}, consumer.Business(fmt.Errorf("charge order %s: %w", o.OrderID, err))
			}
			return consumer.Result{}, fmt.Errorf("charge order %s: %w", o.OrderID, err)
		}
		if _, err := fx.Call(ctx, EffectReceipt, TargetReceipt, func(ctx context.Context) (string, error) {
			return markNotExecuted(p.SendReceipt(ctx, o.Customer, o.OrderID))
		}); err != nil {
			return consumer.Result{}, fmt.Errorf("mail the receipt of order %s: %w", o.OrderID, err)
		}
		return consumer.Result{Body: receipt}, nil
	}
}

// markNotExecuted marks the provider's errors that prove the call did not run (docs/protocol.md,
// "Errors after a call started"), and leaves every other error unmarked: uncertain.
func markNotExecuted(ref string, err error) (string, error) {
	if errors.Is(err, ErrInvalidRequest) || errors.Is(err, ErrConnectRefused) {
		return "", consumer.NotExecuted(err)
	}
	return ref, err
}
