package consumer

import (
	"errors"
)

var (
	// ErrBadConfig means New or Run was given a Config it cannot work with; the message names
	// every bad field.
	ErrBadConfig = errors.New("bad consumer config")

	// ErrOutcomeUnknown is what an EffectFunc may wrap when it cannot tell whether its write
	// happened (a timeout after the request was sent, a dropped connection). Every unmarked error
	// of a started call is uncertain anyway; this one stays uncertain even inside NotExecuted. The
	// event's row becomes uncertain and is never retried automatically.
	ErrOutcomeUnknown = errors.New("external call outcome unknown")

	// ErrLeaseLost means the ledger lease on the event was no longer this consumer's: another
	// instance took it over, or it was marked uncertain. The handler's context is cancelled with it
	// as the cause, and Effects.Call refuses to start a call.
	ErrLeaseLost = errors.New("ledger lease lost")

	// ErrInvalidMessage means a message lacks what the SDK keys on: a valid Event-Id, or replay
	// headers that parse.
	ErrInvalidMessage = errors.New("invalid message")

	// ErrReplayRefused means a replayed message's (job, effect version) is not registered as
	// executing for this consumer.
	ErrReplayRefused = errors.New("replay refused")
)

// businessError marks a terminal business outcome; it keeps the original for errors.Is/As.
type businessError struct{ err error }

func (e *businessError) Error() string { return e.err.Error() }
func (e *businessError) Unwrap() error { return e.err }

// Business marks err as a terminal business outcome (a declined card, an unknown account): the
// event is done and err's message is stored as its result, instead of being retried. Business(nil)
// is nil.
func Business(err error) error {
	if err == nil {
		return nil
	}
	return &businessError{err: err}
}

// IsBusiness reports whether err, or any error it wraps, was marked with Business.
func IsBusiness(err error) bool {
	_, ok := errors.AsType[*businessError](err)
	return ok
}
