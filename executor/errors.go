package executor

import (
	"strings"

	"github.com/replayctl/replayctl/fault"
)

var (
	// ErrBadOptions matches every refusal of the execute request itself (exit code 2).
	ErrBadOptions = fault.New(fault.Invalid, "invalid execute options")

	// ErrGateRefused matches every gate that refused to start or continue a replay: a manifest
	// that is not its recorded job, no passing shadow verdict, a version not bumped, a stale plan,
	// another executor, a declined confirmation (exit code 3). The *GateError says which gate.
	ErrGateRefused = fault.New(fault.Refused, "a gate refused the replay")

	// ErrGuardStopped matches a run a guard stopped (budget, error rate, uncertain items, no
	// progress) or an operator cancelled (exit code 4). The *StopError says which and why.
	ErrGuardStopped = fault.New(fault.Stopped, "the replay was stopped")

	// ErrPublishNotPermitted means the NATS server refused to let this connection publish the
	// replays (exit code 2): the user's permissions, not the job, are wrong, and every retry
	// would be refused the same way.
	ErrPublishNotPermitted = fault.New(fault.Invalid, "publishing replays is not permitted")
)

// Gates, in the order execute checks them.
const (
	GateExecutor     = "one-executor-per-job"
	GateJob          = "manifest-is-the-job"
	GateStatus       = "job-status"
	GateShadow       = "passing-shadow-verdict"
	GateVersion      = "version-bumped"
	GateApproval     = "approved"
	GateAudit        = "audit-chain-holds"
	GateConsumer     = "one-job-per-consumer"
	GateDrift        = "plan-not-stale"
	GateConfirmation = "confirmation"
)

// GateError is one gate's refusal; Message says what is wrong and how to fix it.
type GateError struct {
	Gate    string
	Message string
}

// Error names the gate and says how to fix it.
func (e *GateError) Error() string { return "execute refused (" + e.Gate + "): " + e.Message }

// Is makes a GateError match ErrGateRefused.
func (e *GateError) Is(target error) bool { return target == ErrGateRefused }

// Kind is fault.Refused, as ErrGateRefused's.
func (e *GateError) Kind() fault.Kind { return fault.Refused }

// OptionsError lists every problem of an execute request at once.
type OptionsError struct {
	Problems []string
}

// Error lists the problems, one per line.
func (e *OptionsError) Error() string {
	return "execute refused:\n  " + strings.Join(e.Problems, "\n  ")
}

// Is makes an OptionsError match ErrBadOptions.
func (e *OptionsError) Is(target error) bool { return target == ErrBadOptions }

// Kind is fault.Invalid, as ErrBadOptions'.
func (e *OptionsError) Kind() fault.Kind { return fault.Invalid }

// StopError is a run stopped before its end, or ended with a guard exceeded. The Result
// returned alongside it holds the figures.
type StopError struct{ Stop *Stop }

// Error says why the run stopped.
func (e *StopError) Error() string { return e.Stop.Message }

// Is makes a StopError match ErrGuardStopped.
func (e *StopError) Is(target error) bool { return target == ErrGuardStopped }

// Kind is fault.Stopped, as ErrGuardStopped's.
func (e *StopError) Kind() fault.Kind { return fault.Stopped }
