package manifest

import (
	"github.com/replayctl/replayctl/fault"
)

// ErrInvalid matches every error that means "this manifest must not be used": a *ValidationError,
// ErrMalformed, ErrUnsupportedVersion and ErrTampered. The CLI maps it to exit code 2 with one check.
var ErrInvalid = fault.New(fault.Invalid, "invalid manifest")

// ErrMalformed reports a manifest file that is not one JSON object of the known fields: bad JSON,
// an unknown field, trailing data after the object, or a file over the size limit.
var ErrMalformed error = invalidKind("malformed manifest")

// ErrUnsupportedVersion reports a manifest whose apiVersion is not APIVersion.
var ErrUnsupportedVersion error = invalidKind("unsupported manifest apiVersion")

// ErrTampered reports a manifest whose digest is missing or does not match its content: an invalid
// manifest that is refused like a gate (the contract lists it with the gates).
var ErrTampered = fault.Wrap(fault.Refused, ErrInvalid, "manifest digest mismatch")

// invalidKind is a sentinel that also matches ErrInvalid.
type invalidKind string

func (e invalidKind) Error() string { return string(e) }

func (e invalidKind) Is(target error) bool { return target == ErrInvalid }

// Kind is fault.Invalid, as ErrInvalid's.
func (e invalidKind) Kind() fault.Kind { return fault.Invalid }
