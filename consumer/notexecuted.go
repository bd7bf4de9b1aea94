package consumer

import (
	"context"
	"errors"
)

// ErrNotExecuted matches, with errors.Is, every error marked with NotExecuted.
var ErrNotExecuted = errors.New("external call certainly not executed")

// NotExecutedError is an EffectFunc's error marked by NotExecuted: the provider certainly did not
// act on the call. Match it with errors.As, or errors.Is(err, ErrNotExecuted).
type NotExecutedError struct{ Err error }

// Error is the wrapped error's message.
func (e *NotExecutedError) Error() string { return e.Err.Error() }

// Unwrap returns the original error, so errors.Is and errors.As still find it.
func (e *NotExecutedError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNotExecuted) true for a marked error.
func (e *NotExecutedError) Is(target error) bool { return target == ErrNotExecuted }

// NotExecuted marks err, returned by an EffectFunc, as proof that the external call did not run:
// the request was never sent (connection refused, DNS failure, a client-side validation error),
// or the provider refused it before acting (a validation error it documents as not applied).
// Only such a call is forgotten; every other error from a call that was recorded as started
// leaves the event's row uncertain, because a database rollback or an HTTP error status does not
// prove that the remote side did nothing. Mark nothing you are not sure of. NotExecuted(nil) is nil.
func NotExecuted(err error) error {
	if err == nil {
		return nil
	}
	return &NotExecutedError{Err: err}
}

// certainlyNotExecuted reports whether a started call's error proves that the call did not run. A
// mark that contradicts itself (NotExecuted around a timeout, a cancellation or
// ErrOutcomeUnknown) proves nothing: the call counts as uncertain.
func certainlyNotExecuted(err error) bool {
	return errors.Is(err, ErrNotExecuted) && !outcomeUnknown(err)
}

func outcomeUnknown(err error) bool {
	return errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}
