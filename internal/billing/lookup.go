package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/protocol"
)

// Orders remembers which order each handled event is about. A look-up request carries no payload
// (the ledger keeps none), so the look-up needs the consumer's own record to go from an event ID to
// the provider's key; a real service reads it from its orders table. SharedOrders keeps it there,
// in Records, so every instance answers alike; NewOrders keeps it in this process's memory, for a
// single instance whose restart only sends the events it handled before to manual review.
type Orders struct {
	mu      sync.Mutex
	byEvent map[string]string
	records *Records
}

// NewOrders returns an empty record in memory.
func NewOrders() *Orders { return &Orders{byEvent: map[string]string{}} }

// SharedOrders returns the record kept in r, which every instance of the service shares.
func SharedOrders(r *Records) *Orders { return &Orders{records: r} }

// Record wraps h so the order of every live or replayed event is remembered before h can charge
// it. Shadow requests are not recorded: they charge nothing.
func (o *Orders) Record(h consumer.Handler) consumer.Handler {
	return func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		var order Order
		if ev.Mode != consumer.ModeShadow && json.Unmarshal(ev.Payload, &order) == nil && order.OrderID != "" {
			if err := o.remember(ctx, ev.ID, order.OrderID); err != nil {
				// Nothing was charged yet: a retry records it and goes on.
				return consumer.Result{}, err
			}
		}
		return h(ctx, ev, fx)
	}
}

func (o *Orders) remember(ctx context.Context, eventID, orderID string) error {
	if o.records != nil {
		return o.records.RecordOrder(ctx, eventID, orderID)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.byEvent[eventID] = orderID
	return nil
}

// OrderOf returns the order of eventID, if an event of that ID was handled (by any instance, when
// the record is shared).
func (o *Orders) OrderOf(ctx context.Context, eventID string) (string, bool, error) {
	if o.records != nil {
		return o.records.orderOf(ctx, eventID)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	id, ok := o.byEvent[eventID]
	return id, ok, nil
}

// Lookup answers `replayctl reconcile` from p's charges: an order charged once happened (the
// event needs nothing more and is never replayed), an order never charged did not happen, and an
// order charged more than once, or an event with no recorded order, is unknown. Only the charge is
// checked, the effect that matters: the receipt mail is not verified (the detail says so). With
// p.Records the provider's own list of charges is asked, which every instance shares, and the
// reference returned is the charge ID; without, this process's counts, and the order ID the fake
// provider files its charges under. Either comes after any charge reference the row recorded.
func Lookup(p *Provider, orders *Orders) consumer.LookupFunc {
	return func(ctx context.Context, req consumer.LookupRequest) (consumer.LookupResult, error) {
		if err := ctx.Err(); err != nil {
			return consumer.LookupResult{}, err
		}
		orderID, ok, err := orders.OrderOf(ctx, req.EventID)
		if err != nil {
			return consumer.LookupResult{}, err
		}
		if !ok {
			return consumer.LookupResult{Verdict: protocol.VerdictUnknown,
				Detail: fmt.Sprintf("the billing service has no record of event %s's order (handled before a restart of an instance keeping it in memory?)", req.EventID)}, nil
		}
		charges, err := p.chargesOf(ctx, orderID)
		if err != nil {
			return consumer.LookupResult{}, err
		}
		var total int64
		for _, c := range charges {
			total += c.TotalCents
		}
		switch {
		case len(charges) == 0:
			return consumer.LookupResult{Verdict: protocol.VerdictNotHappened,
				Detail: fmt.Sprintf("the payment provider has no charge for order %s", orderID)}, nil
		case len(charges) > 1:
			return consumer.LookupResult{Verdict: protocol.VerdictUnknown,
				Detail: fmt.Sprintf("order %s was charged %d times (%d cents): refund the duplicates by hand", orderID, len(charges), total)}, nil
		}
		var refs []protocol.Effect
		for _, r := range req.ExternalRefs {
			if r.Kind == EffectCharge && r.Ref != "" {
				refs = append(refs, r)
			}
		}
		refs = append(refs, protocol.Effect{Kind: EffectCharge, Target: TargetCharge, Ref: charges[0].ID})
		return consumer.LookupResult{Verdict: protocol.VerdictHappened, ExternalRefs: refs,
			Detail: fmt.Sprintf("order %s was charged once (%d cents); the receipt mail is not verified", orderID, total)}, nil
	}
}
