package cli

import (
	"errors"
	"fmt"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/natsconn"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobhistory"
	"github.com/replayctl/replayctl/keys"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/planner"
	"github.com/replayctl/replayctl/reconcile"
	"github.com/replayctl/replayctl/shadow"
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

// exitCodes maps domain errors to exit codes, matched in order with errors.Is. It is the one
// place this mapping lives; errors not listed are runtime failures.
var exitCodes = []struct {
	err  error
	code int
}{
	{ErrUsage, ExitUsage},
	// NATS settings that cannot work (an unknown context, two kinds of credentials, a missing
	// file) and credentials or TLS the server refused: retrying unchanged cannot succeed.
	{natsconn.ErrSettings, ExitUsage},
	{natsconn.ErrRefused, ExitUsage},
	// A URL that does not parse is bad input; an unreachable server (ErrUnavailable) is not.
	{ledger.ErrInvalidURL, ExitUsage},
	// A role without the privilege a statement needs fails the same way on every retry: the
	// deployment's grants are wrong, not the ledger's rows.
	{ledger.ErrPermissionDenied, ExitUsage},
	// A manifest edited after plan is not the job that was planned: the contract lists it with the
	// gates. It also matches ErrInvalid, so it must come first.
	{manifest.ErrTampered, ExitGateRefused},
	{manifest.ErrInvalid, ExitUsage},
	{ledger.ErrJobNotFound, ExitUsage},
	// A job planned before manifests were stored with jobs: its file is the way to name it.
	{ledger.ErrManifestNotStored, ExitUsage},
	// The manifest stored with a job was changed in the ledger: refused like a tampered file.
	{ledger.ErrManifestCorrupt, ExitGateRefused},
	// Refusals of a plan request are bad input: nothing was scanned or recorded.
	{planner.ErrBadOptions, ExitUsage},
	{planner.ErrVersionNotBumped, ExitUsage},
	{planner.ErrStreamNotFound, ExitUsage},
	{planner.ErrStreamUnsupported, ExitUsage},
	// A boundary without targets is the wrong boundary (a source stream planned as a DLQ, a filter
	// that matches nothing): the error says which exclusion took the messages.
	{planner.ErrNoTargets, ExitUsage},
	{shadow.ErrBadOptions, ExitUsage},
	// The manifest is sound but is not the job recorded for it, or that job already ran: shadow's
	// gate refuses, like execute's gates.
	{shadow.ErrJobMismatch, ExitGateRefused},
	// One shadow run per job at a time: a second one is refused, not interleaved.
	{ledger.ErrShadowRunning, ExitGateRefused},
	{executor.ErrBadOptions, ExitUsage},
	// A NATS user without publish permission on the replays' subjects is refused on every retry.
	{executor.ErrPublishNotPermitted, ExitUsage},
	{executor.ErrGateRefused, ExitGateRefused},
	// A manifest file that is not its recorded job, outside shadow's and execute's gates (validate
	// --ledger, a file naming the job of pause or status): another digest is refused like those
	// gates, a job the ledger never recorded is bad input. After shadow's and execute's families,
	// which wrap it and refuse both as a gate.
	{job.ErrOtherDigest, ExitGateRefused},
	{job.ErrNotRecorded, ExitUsage},
	{executor.ErrGuardStopped, ExitGuardStopped},
	// A pause, resume or cancel the job's status does not allow is refused like a gate.
	{job.ErrNotControllable, ExitGateRefused},
	{job.ErrBadControl, ExitUsage},
	// A drain of a job still running, of a backfill's source or of a recreated stream is refused
	// like a gate: nothing was deleted.
	{executor.ErrNotDrainable, ExitGateRefused},
	// A misspelt --consumer would otherwise report zeros, or prune nothing every night.
	{ledger.ErrUnknownConsumer, ExitUsage},
	{ledger.ErrPruneAsOfFuture, ExitUsage},
	{reconcile.ErrBadOptions, ExitUsage},
	// A jobs filter naming no status a job can have would list nothing, silently.
	{jobhistory.ErrBadFilter, ExitUsage},
	// Applying look-up verdicts unconfirmed is refused like execute's confirmation gate.
	{reconcile.ErrNotConfirmed, ExitGateRefused},
	// Resolving an event that has no uncertain row (or several, without --effect-version) is bad input.
	{reconcile.ErrNothingToResolve, ExitUsage},
	// keys: a key, a resolution or a note that cannot name what was meant, or no such record, is
	// bad input; a record settled meanwhile is a runtime outcome (look again); an unconfirmed
	// resolve or prune is refused like the other confirmations.
	{keys.ErrBadRequest, ExitUsage},
	{keys.ErrNotFound, ExitUsage},
	{keys.ErrNotConfirmed, ExitGateRefused},
}

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
var ErrUsage = errors.New("usage error")

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func (e *usageError) Is(target error) bool { return target == ErrUsage }

// usageErrorf returns an error matching ErrUsage.
func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// withPrivilegeHint marks a statement PostgreSQL refused for the role's privileges and says where
// the grants come from; other errors are returned unchanged.
func withPrivilegeHint(err error) error {
	classified := ledger.ClassifyPermission(err)
	if classified == err {
		return err
	}
	return fmt.Errorf("%w; the role in --database-url needs the grants of its kind: see replayctl ledger grants --help and docs/operations.md", classified)
}

// exitCode returns the exit code for err: an ExitError's own code, else the first match in
// exitCodes, else ExitFailure.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	if ee, ok := errors.AsType[*ExitError](err); ok {
		return ee.Code
	}
	for _, m := range exitCodes {
		if errors.Is(err, m.err) {
			return m.code
		}
	}
	return ExitFailure
}
