package reconcile

import (
	"errors"
	"strings"

	"github.com/replayctl/replayctl/fault"
)

var (
	// ErrBadOptions matches every refusal of the reconcile request itself (exit code 2).
	ErrBadOptions = fault.New(fault.Invalid, "invalid reconcile options")

	// ErrNoResponder means nothing answers replay.reconcile.<consumer>: the consumer runs without a
	// look-up (consumer.Config.Lookup), or not at all. Nothing was changed.
	ErrNoResponder = errors.New("no look-up responder")

	// ErrUnanswered means the look-up responder stopped answering (a long run of timeouts), so the
	// run stopped before applying anything. Nothing was changed.
	ErrUnanswered = errors.New("look-ups unanswered")

	// ErrNotConfirmed means the operator did not confirm applying the verdicts (on a terminal), or
	// there was no terminal and no --yes. Nothing was changed.
	ErrNotConfirmed = fault.New(fault.Refused, "not confirmed")
)

// OptionsError lists every problem of a reconcile request at once.
type OptionsError struct{ Problems []string }

// Error lists the problems, one per line.
func (e *OptionsError) Error() string {
	return "reconcile refused:\n  " + strings.Join(e.Problems, "\n  ")
}

// Is makes an OptionsError match ErrBadOptions.
func (e *OptionsError) Is(target error) bool { return target == ErrBadOptions }

// Kind is fault.Invalid, as ErrBadOptions'.
func (e *OptionsError) Kind() fault.Kind { return fault.Invalid }
