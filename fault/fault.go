// Package fault gives each error an operator can act on one of a handful of kinds, so the command
// line maps kinds to exit codes in one switch that imports no domain package (wtf's error codes).
// Domain packages and adapters define their sentinels with New or Wrap; an error without a kind
// anywhere in its chain is a runtime failure.
package fault

import "errors"

// Kind says what an operator can do about an error.
type Kind int

// The kinds, each with its documented exit code (docs/contract.md).
const (
	// Runtime: a database or NATS server unreachable, an interrupt, a bug; retrying the same
	// command may succeed (exit 1).
	Runtime Kind = iota
	// Invalid: the invocation or its input is wrong; retrying it unchanged cannot succeed (exit 2).
	Invalid
	// Refused: a safety gate refused to proceed (exit 3).
	Refused
	// Stopped: a guard stopped a running replay (exit 4).
	Stopped
	// Review: finished, but items need a person (exit 5).
	Review
)

// String names the kind in logs and tests.
func (k Kind) String() string {
	switch k {
	case Invalid:
		return "invalid"
	case Refused:
		return "refused"
	case Stopped:
		return "stopped"
	case Review:
		return "review"
	}
	return "runtime"
}

// Error is a sentinel of a kind; it may also match another sentinel (Wrap).
type Error struct {
	kind Kind
	msg  string
	base error
}

// Error returns the sentinel's message.
func (e *Error) Error() string { return e.msg }

// Kind returns the sentinel's kind.
func (e *Error) Kind() Kind { return e.kind }

// Unwrap returns the sentinel this one also matches, if any.
func (e *Error) Unwrap() error { return e.base }

// New returns a sentinel of kind with msg.
func New(kind Kind, msg string) error { return &Error{kind: kind, msg: msg} }

// Wrap returns a sentinel of kind that also matches base with errors.Is: a manifest whose digest
// was tampered with is an invalid manifest that is refused like a gate.
func Wrap(kind Kind, base error, msg string) error { return &Error{kind: kind, msg: msg, base: base} }

// Kinded is implemented by errors that carry a kind of their own (a type with methods, where a
// sentinel from New does not fit).
type Kinded interface {
	error
	Kind() Kind
}

// KindOf returns the kind of the outermost error in err's chain that has one (errors.As order), or
// Runtime: wrapping an error in a gate's refusal makes the whole a refusal.
func KindOf(err error) Kind {
	if k, ok := errors.AsType[Kinded](err); ok {
		return k.Kind()
	}
	return Runtime
}
