package planner

import (
	"strings"

	"github.com/replayctl/replayctl/fault"
)

// ErrBadOptions matches every refusal of the plan request itself (exit code 2).
var ErrBadOptions = fault.New(fault.Invalid, "invalid plan options")

// ErrVersionNotBumped is returned when --effect-version is not above every version the ledger holds.
var ErrVersionNotBumped = fault.New(fault.Invalid, "effect version not bumped")

// ErrStreamNotFound is returned when the DLQ stream does not exist.
var ErrStreamNotFound = fault.New(fault.Invalid, "stream not found")

// ErrNoTargets matches a *NoTargetsError: the boundary holds no event to replay, so nothing was
// recorded (exit code 2).
var ErrNoTargets = fault.New(fault.Invalid, "plan has no targets")

// ErrStreamUnsupported is returned for a DLQ stream plan cannot scan without changing it.
var ErrStreamUnsupported = fault.New(fault.Invalid, "stream cannot be scanned")

// OptionsError lists every problem of a plan request at once, so the operator fixes them in one go.
type OptionsError struct {
	Problems []string
	// Verb is the command refused: plan, or inspect, which takes plan's options.
	Verb string
}

// Error lists the problems, one per line.
func (e *OptionsError) Error() string {
	verb := e.Verb
	if verb == "" {
		verb = "plan"
	}
	return verb + " refused:\n  " + strings.Join(e.Problems, "\n  ")
}

// Is makes an OptionsError match ErrBadOptions.
func (e *OptionsError) Is(target error) bool { return target == ErrBadOptions }

// Kind is fault.Invalid, as ErrBadOptions'.
func (e *OptionsError) Kind() fault.Kind { return fault.Invalid }
