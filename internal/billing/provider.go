package billing

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
)

// The provider's failures that prove a call did not run. Any other error from a call may come
// after the provider acted (a connection reset, a 5xx, a timeout), and the handler leaves it
// unmarked so the event's row becomes uncertain.
var (
	// ErrInvalidRequest is the provider's validation refusal (an HTTP 400 or 422 it documents as
	// applying nothing): the request was read and refused before anything was charged.
	ErrInvalidRequest = errors.New("payment provider refused the request as invalid (HTTP 422)")
	// ErrConnectRefused means the connection was refused before the request was sent.
	ErrConnectRefused = errors.New("payment provider unreachable: connection refused before the request was sent")
)

// Provider is an in-memory payment provider and mailer. It counts every call it receives, so a
// test or the demo can prove that a shadow pass made none, and it can be told to fail.
type Provider struct {
	mu      sync.Mutex
	calls   map[string]int64
	charged map[string]int64
	charges map[string]int64
	// operations are the charges made under an operation ID, and apiOrders the charge of each
	// order charged under one, for ChargesOfOperation and the provider's idempotency without Records.
	operations map[string][]Charge
	apiOrders  map[string]Charge
	// Fail, when set, is asked before each call; a non-nil error fails that call before the
	// provider acts on it (nothing is counted or charged). Use it for ErrInvalidRequest and
	// ErrConnectRefused.
	Fail func(kind, ref string) error
	// FailAfter, when set, is asked after each call took effect (counted and charged); a non-nil
	// error is returned instead of the reference, as a connection reset or a 5xx after the
	// provider acted would be.
	FailAfter func(kind, ref string) error
	// Records, when set, is where the provider keeps its charges, shared by every instance of
	// the service, as a real provider's are: the look-up asks it, not this process's counts.
	Records *Records
}

// NewProvider returns a provider that has received no call.
func NewProvider() *Provider {
	return &Provider{calls: map[string]int64{}, charged: map[string]int64{}, charges: map[string]int64{}, operations: map[string][]Charge{}, apiOrders: map[string]Charge{}}
}

// Charge charges totalCents for orderID and returns the charge ID.
func (p *Provider) Charge(ctx context.Context, orderID string, totalCents int64, currency string) (string, error) {
	return p.ChargeOperation(ctx, "", orderID, totalCents, currency)
}

// ChargeOperation is Charge filed under the caller's operationID (an API request's
// idempotency.OperationID), by which ChargesOfOperation finds it later. The provider honours the
// operation ID as its own idempotency key, as Stripe honours Idempotency-Key: a second call with
// it makes no charge and answers with the first one's ID, whoever sends it and whenever (a
// process that froze mid-call and resumed, a retry after a look-up found nothing yet). And it
// charges an order once whatever the operation: a call for an order another operation charged
// is refused before anything is charged, with an *OrderChargedError naming that charge.
func (p *Provider) ChargeOperation(ctx context.Context, operationID, orderID string, totalCents int64, currency string) (string, error) {
	if operationID == "" {
		return p.charge(ctx, orderID, totalCents, currency)
	}
	// Unique across instances, which share the provider's records. An API charge's ID names no
	// order: it is the reference the API's ledger keeps, which holds no payload field.
	c := Charge{ID: "ch_" + rand.Text()[:16], OrderID: orderID, TotalCents: totalCents, OperationID: operationID}
	first := c
	var store func(context.Context) error
	if p.Records != nil {
		store = func(ctx context.Context) (err error) {
			first, err = p.Records.chargeOnce(ctx, c, currency)
			return err
		}
	}
	return p.call(ctx, EffectCharge, orderID, store, func() (string, bool, error) {
		if p.Records == nil {
			first = p.firstChargeLocked(c)
		}
		if first.OperationID != operationID {
			return "", false, &OrderChargedError{OrderID: orderID, ChargeID: first.ID}
		}
		if first.ID != c.ID {
			return first.ID, false, nil // the operation's first charge, answered again
		}
		p.charged[orderID] += totalCents
		p.charges[orderID]++
		if p.Records == nil {
			p.operations[operationID] = append(p.operations[operationID], c)
			p.apiOrders[orderID] = c
		}
		return c.ID, true, nil
	})
}

// firstChargeLocked is the charge the in-memory provider already made under c's operation or for
// c's order under another operation; c itself when there is none.
func (p *Provider) firstChargeLocked(c Charge) Charge {
	if prior := p.operations[c.OperationID]; len(prior) > 0 {
		return prior[0]
	}
	if prior, ok := p.apiOrders[c.OrderID]; ok {
		return prior
	}
	return c
}

// OrderChargedError is the provider's refusal of a charge for an order another operation (an API
// request under another Idempotency-Key) already charged: nothing was charged by this call.
type OrderChargedError struct {
	OrderID, ChargeID string
}

// Error names the order and the charge that stands.
func (e *OrderChargedError) Error() string {
	return fmt.Sprintf("payment provider: order %s is already charged (%s) under another operation", e.OrderID, e.ChargeID)
}

// failBefore asks Fail, outside the lock: a Fail that blocks (a test's stalled call) must not stop
// the provider's other calls and look-ups.
func (p *Provider) failBefore(kind, orderID string) error {
	p.mu.Lock()
	fail := p.Fail
	p.mu.Unlock()
	if fail != nil {
		return fail(kind, orderID)
	}
	return nil
}

// charge is an event's charge: the consumer's ledger, not the provider, keeps it to one per
// event and effect version.
func (p *Provider) charge(ctx context.Context, orderID string, totalCents int64, currency string) (string, error) {
	c := Charge{ID: "ch_" + orderID + "_" + rand.Text()[:8], OrderID: orderID, TotalCents: totalCents}
	var store func(context.Context) error
	if p.Records != nil {
		store = func(ctx context.Context) error { return p.Records.recordCharge(ctx, c, currency) }
	}
	return p.call(ctx, EffectCharge, orderID, store, func() (string, bool, error) {
		p.charged[orderID] += totalCents
		p.charges[orderID]++
		return c.ID, true, nil
	})
}

// SendReceipt mails customer the receipt of orderID and returns the message ID.
func (p *Provider) SendReceipt(ctx context.Context, customer, orderID string) (string, error) {
	return p.call(ctx, EffectReceipt, orderID, nil, func() (string, bool, error) {
		return fmt.Sprintf("msg_%s_%d", orderID, p.calls[EffectReceipt]+1), true, nil
	})
}

// call makes one call: Fail may refuse it, store (if any) keeps it in the shared records, took
// records it and returns its reference, whether it took effect now (a call the provider answers
// from an earlier one is not counted) or the provider's refusal, then FailAfter may fail its
// answer. store runs outside
// the lock: held across a database commit, the lock let one charge at a time through for every
// handler of the process, which capped the whole consumer at the commit rate of one connection
// (docs/benchmarks-history.md, "What held the consumer back").
func (p *Provider) call(ctx context.Context, kind, orderID string, store func(context.Context) error, took func() (string, bool, error)) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := p.failBefore(kind, orderID); err != nil {
		return "", err
	}
	if store != nil {
		if err := store(ctx); err != nil {
			return "", err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ref, counted, err := took()
	if err != nil {
		return "", err
	}
	if counted {
		p.calls[kind]++
	}
	if p.FailAfter != nil {
		if err := p.FailAfter(kind, orderID); err != nil {
			return "", err
		}
	}
	return ref, nil
}

// Calls returns how many calls of kind took effect, FailAfter's included; an empty kind counts
// every kind.
func (p *Provider) Calls(kind string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if kind != "" {
		return p.calls[kind]
	}
	var n int64
	for _, c := range p.calls {
		n += c
	}
	return n
}

// Charges returns how many times orderID was charged: more than once is a duplicate external effect.
func (p *Provider) Charges(orderID string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.charges[orderID]
}

// chargesOf lists orderID's charges from the provider's shared records, or, without them, as this
// process counted them (the order ID stands for the charge ID).
func (p *Provider) chargesOf(ctx context.Context, orderID string) ([]Charge, error) {
	if p.Records != nil {
		return p.Records.ChargesOf(ctx, orderID)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	charges := make([]Charge, p.charges[orderID])
	for i := range charges {
		charges[i] = Charge{ID: orderID, OrderID: orderID}
	}
	if len(charges) > 0 {
		// The counts keep the order's total, not each charge's.
		charges[0].TotalCents = p.charged[orderID]
	}
	return charges, nil
}

// ChargedOrders returns how many times each order was charged.
func (p *Provider) ChargedOrders() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int64, len(p.charges))
	for k, v := range p.charges {
		out[k] = v
	}
	return out
}

// ChargesOfOperation lists the charges made under operationID: from the provider's shared
// records when it has them, else as this process made them.
func (p *Provider) ChargesOfOperation(ctx context.Context, operationID string) ([]Charge, error) {
	if p.Records != nil {
		return p.Records.ChargesOfOperation(ctx, operationID)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Charge(nil), p.operations[operationID]...), nil
}
