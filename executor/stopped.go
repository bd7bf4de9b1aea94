package executor

import (
	"errors"
	"fmt"

	"github.com/replayctl/replayctl/ledger"
)

// ErrLedgerRefused matches a run stopped because PostgreSQL answered one of its statements with
// an error (a constraint violation, an undefined column): the statement reached the server and was
// refused, which running execute again does not change. The *LedgerRefusedError carries the
// SQLSTATE.
var ErrLedgerRefused = errors.New("the ledger refused a statement")

// LedgerRefusedError is a run stopped by a statement PostgreSQL refused.
type LedgerRefusedError struct {
	JobID     string
	Published int64
	// SQLState is PostgreSQL's error code; Err is the whole chain, for errors.As.
	SQLState string
	Err      error
}

// Error names the job, PostgreSQL's answer and what to do; it does not promise a rerun helps.
func (e *LedgerRefusedError) Error() string {
	return fmt.Sprintf("execute of job %s stopped after publishing %d targets in this run: the ledger refused a statement "+
		"with SQLSTATE %s: %v; this is not a lost connection, and running execute again is likely to fail the same way: "+
		"report it with this message and the output of `replayctl status %s`; the job stays executing",
		e.JobID, e.Published, e.SQLState, e.Err, e.JobID)
}

// Unwrap returns the chain, so the PostgreSQL error stays reachable with errors.As.
func (e *LedgerRefusedError) Unwrap() error { return e.Err }

// Is makes a LedgerRefusedError match ErrLedgerRefused.
func (e *LedgerRefusedError) Is(target error) bool { return target == ErrLedgerRefused }

// stoppedBy says why a run stopped on err and what to do. A lost ledger connection (the server
// restarted, a session was terminated, the network failed) changed nothing the ledger cannot tell
// again: running execute again continues. An answer from PostgreSQL is a bug, in replayctl or in
// the schema, and says so with its SQLSTATE. Any other error (NATS) already says what to do.
func stoppedBy(jobID string, published int64, err error) error {
	if ledger.ConnectionLost(err) {
		return fmt.Errorf("execute of job %s stopped after publishing %d targets in this run: lost the ledger connection: %w; "+
			"nothing is lost and the job stays executing: run `replayctl execute` on its manifest again to continue", jobID, published, err)
	}
	if code, ok := ledger.Refused(err); ok {
		return &LedgerRefusedError{JobID: jobID, Published: published, SQLState: code, Err: err}
	}
	return err
}
