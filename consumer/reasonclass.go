package consumer

import "errors"

// reasonClassError carries the class WithReasonClass gave an error.
type reasonClassError struct {
	class string
	err   error
}

func (e *reasonClassError) Error() string { return e.err.Error() }
func (e *reasonClassError) Unwrap() error { return e.err }

// WithReasonClass marks err with class, the short, stable cause a dead-lettered event is filed
// under in its DLQ message's Dlq-Reason header ("provider unavailable", "schema v3 rejected"):
// plan groups the DLQ by it and --failure-match matches it, so it must not carry event data.
// err's own text travels as the detail. WithReasonClass(class, nil) is nil.
func WithReasonClass(class string, err error) error {
	if err == nil {
		return nil
	}
	return &reasonClassError{class: class, err: err}
}

// reasonClass is the class a failure is dead-lettered under: the one WithReasonClass gave an
// error in err's chain, else the text of err's root cause. Wrapping adds context such as order
// and event IDs on the way out (`charge order o-1: %w`), so the innermost error is the cause
// without them; the first of a joined error's causes stands for all.
func reasonClass(err error) string {
	if c, ok := errors.AsType[*reasonClassError](err); ok {
		return c.class
	}
	for {
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			if next := u.Unwrap(); next != nil {
				err = next
				continue
			}
		case interface{ Unwrap() []error }:
			if causes := u.Unwrap(); len(causes) > 0 && causes[0] != nil {
				err = causes[0]
				continue
			}
		}
		return err.Error()
	}
}
