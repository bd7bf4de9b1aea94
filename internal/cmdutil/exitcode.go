package cmdutil

import (
	"errors"
	"fmt"

	"github.com/replayctl/replayctl/fault"
)

// Exit codes of replayctl, a public contract (docs/contract.md): runbooks and CI branch on them.
const (
	// ExitOK means the command did what it was asked.
	ExitOK = 0
	// ExitFailure is a runtime failure: a database or NATS server unreachable, an interrupt, a bug.
	// Retrying the same command may succeed.
	ExitFailure = 1
	// ExitUsage means the invocation or its input is wrong (flags, arguments, an invalid
	// manifest); retrying it unchanged cannot succeed.
	ExitUsage = 2
	// ExitGateRefused means a safety gate refused to proceed (no passing shadow, a stale or
	// tampered manifest, a confirmation declined).
	ExitGateRefused = 3
	// ExitGuardStopped means a guard stopped a running replay (budget, error rate).
	ExitGuardStopped = 4
	// ExitNeedsReview means the run finished but some items need manual review (uncertain).
	ExitNeedsReview = 5
)

// ExitError ends a command with an explicit exit code, for outcomes no sentinel describes (a
// declined confirmation, a run that finished with items to review).
type ExitError struct {
	// Code is the process exit code, one of the Exit constants.
	Code int
	// Err says what happened; Execute prints it.
	Err error
	// Reported means the command already wrote its result, this failure included, as JSON on
	// stdout; Execute then prints the error on stderr only, so stdout stays one JSON document.
	Reported bool
}

// Error returns the message of the underlying error.
func (e *ExitError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error, so sentinels inside an ExitError still match.
func (e *ExitError) Unwrap() error { return e.Err }

// ErrUsage matches every error about how replayctl was invoked: unknown flags or commands, wrong
// arguments, bad flag values. Execute adds a hint to --help to these.
var ErrUsage = fault.New(fault.Invalid, "usage error")

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func (e *usageError) Is(target error) bool { return target == ErrUsage }

// Kind is fault.Invalid: retrying the same invocation cannot succeed.
func (e *usageError) Kind() fault.Kind { return fault.Invalid }

// UsageErrorf returns an error matching ErrUsage.
func UsageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// ExitCode returns the exit code for err: an ExitError's own code, else its kind's (package
// fault: the outermost error in its chain that has one), else ExitFailure. Domain packages give
// their errors a kind where they define them; this switch is the whole map.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	if ee, ok := errors.AsType[*ExitError](err); ok {
		return ee.Code
	}
	switch fault.KindOf(err) {
	case fault.Invalid:
		return ExitUsage
	case fault.Refused:
		return ExitGateRefused
	case fault.Stopped:
		return ExitGuardStopped
	case fault.Review:
		return ExitNeedsReview
	}
	return ExitFailure
}
