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
// the provider's key; a real service reads it from its orders table. The example keeps it in
// memory, filled before the handler runs: a restarted billing-consumer answers unknown for the
// events it handled before, which only sends them to manual review.
type Orders struct {
	mu      sync.Mutex
	byEvent map[string]string
}

// NewOrders returns an empty record.
func NewOrders() *Orders { return &Orders{byEvent: map[string]string{}} }

// Record wraps h so the order of every live or replayed event is remembered before h can charge
// it. Shadow requests are not recorded: they charge nothing.
func (o *Orders) Record(h consumer.Handler) consumer.Handler {
	return func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		var order Order
		if ev.Mode != consumer.ModeShadow && json.Unmarshal(ev.Payload, &order) == nil && order.OrderID != "" {
			o.mu.Lock()
			o.byEvent[ev.ID] = order.OrderID
			o.mu.Unlock()
		}
		return h(ctx, ev, fx)
	}
}

// OrderOf returns the order of eventID, if an event of that ID was handled here.
func (o *Orders) OrderOf(eventID string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	id, ok := o.byEvent[eventID]
	return id, ok
}

// Lookup answers `replayctl reconcile` from p's charges: an order charged once happened (the
// event needs nothing more and is never replayed), an order never charged did not happen, and an
// order charged more than once, or an event this process has no order for, is unknown. Only the
// charge is checked, the effect that matters: the receipt mail is not verified (the detail says
// so). The fake provider keeps no charge IDs, so the reference returned is the order ID the
// provider files its charges under, after any charge reference the row itself recorded.
func Lookup(p *Provider, orders *Orders) consumer.LookupFunc {
	return func(ctx context.Context, req consumer.LookupRequest) (consumer.LookupResult, error) {
		if err := ctx.Err(); err != nil {
			return consumer.LookupResult{}, err
		}
		orderID, ok := orders.OrderOf(req.EventID)
		if !ok {
			return consumer.LookupResult{Verdict: protocol.VerdictUnknown,
				Detail: fmt.Sprintf("this billing-consumer has no record of event %s's order (handled before a restart?)", req.EventID)}, nil
		}
		charges := p.Charges(orderID)
		switch {
		case charges == 0:
			return consumer.LookupResult{Verdict: protocol.VerdictNotHappened,
				Detail: fmt.Sprintf("the payment provider has no charge for order %s", orderID)}, nil
		case charges > 1:
			return consumer.LookupResult{Verdict: protocol.VerdictUnknown,
				Detail: fmt.Sprintf("order %s was charged %d times (%d cents): refund the duplicates by hand", orderID, charges, p.Charged(orderID))}, nil
		}
		var refs []protocol.Effect
		for _, r := range req.ExternalRefs {
			if r.Kind == EffectCharge && r.Ref != "" {
				refs = append(refs, r)
			}
		}
		refs = append(refs, protocol.Effect{Kind: EffectCharge, Target: TargetCharge, Ref: orderID})
		return consumer.LookupResult{Verdict: protocol.VerdictHappened, ExternalRefs: refs,
			Detail: fmt.Sprintf("order %s was charged once (%d cents); the receipt mail is not verified", orderID, p.Charged(orderID))}, nil
	}
}
