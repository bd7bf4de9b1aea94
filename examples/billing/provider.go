package billing

import (
	"context"
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
	// Fail, when set, is asked before each call; a non-nil error fails that call before the
	// provider acts on it (nothing is counted or charged). Use it for ErrInvalidRequest and
	// ErrConnectRefused.
	Fail func(kind, ref string) error
	// FailAfter, when set, is asked after each call took effect (counted and charged); a non-nil
	// error is returned instead of the reference, as a connection reset or a 5xx after the
	// provider acted would be.
	FailAfter func(kind, ref string) error
}

// NewProvider returns a provider that has received no call.
func NewProvider() *Provider {
	return &Provider{calls: map[string]int64{}, charged: map[string]int64{}, charges: map[string]int64{}}
}

// Charge charges totalCents for orderID and returns the charge ID.
func (p *Provider) Charge(ctx context.Context, orderID string, totalCents int64, currency string) (string, error) {
	return p.call(ctx, EffectCharge, orderID, func(n int64) string {
		p.charged[orderID] += totalCents
		p.charges[orderID]++
		return fmt.Sprintf("ch_%s_%d", orderID, n)
	})
}

// SendReceipt mails customer the receipt of orderID and returns the message ID.
func (p *Provider) SendReceipt(ctx context.Context, customer, orderID string) (string, error) {
	return p.call(ctx, EffectReceipt, orderID, func(n int64) string { return fmt.Sprintf("msg_%s_%d", orderID, n) })
}

func (p *Provider) call(ctx context.Context, kind, orderID string, do func(n int64) string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Fail != nil {
		if err := p.Fail(kind, orderID); err != nil {
			return "", err
		}
	}
	p.calls[kind]++
	ref := do(p.calls[kind])
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

// Charged returns the total charged for orderID, in cents: twice the order's total means a double charge.
func (p *Provider) Charged(orderID string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.charged[orderID]
}

// Charges returns how many times orderID was charged: more than once is a duplicate external effect.
func (p *Provider) Charges(orderID string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.charges[orderID]
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
