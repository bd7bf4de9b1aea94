package idempotency

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/replayctl/replayctl/apikey"
)

// ErrLeaseLost means the record's lease is not the request's any more (it lapsed and another
// request or the reconcile worker acted on it): Call made no external call.
var ErrLeaseLost = errors.New("the idempotency record's lease was lost; the external call was not made")

// ErrNotExecuted matches every error marked with NotExecuted.
var ErrNotExecuted = errors.New("external call certainly not executed")

type notExecutedError struct{ err error }

func (e *notExecutedError) Error() string        { return e.err.Error() }
func (e *notExecutedError) Unwrap() error        { return e.err }
func (e *notExecutedError) Is(target error) bool { return target == ErrNotExecuted }

// NotExecuted marks an error of Call's fn as proof that the provider did not act (connection
// refused, a validation error it documents as applying nothing). Any other error after a call
// started leaves the record uncertain. NotExecuted(nil) is nil.
func NotExecuted(err error) error {
	if err == nil {
		return nil
	}
	return &notExecutedError{err}
}

// calls is the state of one claimed request, carried in its context.
type calls struct {
	store Store
	key   apikey.Key
	owner string
	opID  string

	mu          sync.Mutex
	started     int
	notExecuted int
	refs        []string
}

type callsKey struct{}

func callsOf(ctx context.Context) *calls {
	c, _ := ctx.Value(callsKey{}).(*calls)
	return c
}

// Call makes one external call of a request the middleware claimed: it records in the ledger
// that the call starts before making it, so a crash from here on leaves the record uncertain,
// never re-run by a retry. fn returns the provider's reference, kept as the record's external
// reference. Outside a claimed request (no key on an optional route) fn just runs.
func Call(ctx context.Context, kind string, fn func(context.Context) (ref string, err error)) (string, error) {
	c := callsOf(ctx)
	if c == nil {
		return fn(ctx)
	}
	ok, err := c.store.APIKeysCallStarted(ctx, c.key, c.owner)
	if err != nil {
		return "", NotExecuted(fmt.Errorf("%s: record the call before making it: %w", kind, err))
	}
	if !ok {
		return "", NotExecuted(fmt.Errorf("%s: %w", kind, ErrLeaseLost))
	}
	c.mu.Lock()
	c.started++
	c.mu.Unlock()
	ref, err := fn(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil && errors.Is(err, ErrNotExecuted) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		c.notExecuted++
	}
	if err == nil && ref != "" {
		c.refs = append(c.refs, ref)
	}
	return ref, err
}

// OperationID returns the ID the handler passes to the provider with its call (as its own
// idempotency key or a reference), so the route's Lookup can ask whether the call happened,
// even after the record is gone. Empty outside a claimed request.
func OperationID(ctx context.Context) string {
	if c := callsOf(ctx); c != nil {
		return c.opID
	}
	return ""
}

// mayHaveActed reports whether a call started that is not proven not to have run.
func (c *calls) mayHaveActed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started > c.notExecuted
}

// startedAny reports whether the request recorded a call start: only then can its lease have
// lapsed into uncertain rather than been taken by a retry before anything happened.
func (c *calls) startedAny() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started > 0
}

func (c *calls) externalRef() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.refs) == 0 {
		return ""
	}
	return c.refs[0]
}
