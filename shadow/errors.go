package shadow

import (
	"strings"

	"github.com/replayctl/replayctl/fault"
)

var (
	// ErrBadOptions matches every refusal of the shadow request itself (exit code 2).
	ErrBadOptions = fault.New(fault.Invalid, "invalid shadow options")

	// ErrJobMismatch means the manifest cannot be shadowed against the ledger: it is not its
	// recorded job (wrapping a *job.RecordedError: no job, or another digest), or the job already
	// ran (executing, completed, cancelled). A gate refused (exit code 3).
	ErrJobMismatch = fault.New(fault.Refused, "manifest does not match a shadowable job")
)

// OptionsError lists every problem of a shadow request at once, so the operator fixes them in one go.
type OptionsError struct{ Problems []string }

// Error lists the problems, one per line.
func (e *OptionsError) Error() string {
	return "shadow refused:\n  " + strings.Join(e.Problems, "\n  ")
}

// Is makes an OptionsError match ErrBadOptions.
func (e *OptionsError) Is(target error) bool { return target == ErrBadOptions }

// Kind is fault.Invalid, as ErrBadOptions'.
func (e *OptionsError) Kind() fault.Kind { return fault.Invalid }
