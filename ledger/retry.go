package ledger

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Idempotent statements are sent again for this long after losing their connection. A session
// killed by an administrator, a failover or a server restart costs a run nothing then; a server
// that stays down is reported after it, as before.
const (
	lostConnectionBudget    = 8 * time.Second
	lostConnectionFirstWait = 50 * time.Millisecond
	lostConnectionMaxWait   = time.Second
)

// runEndBudget is inTx's: the transaction that records how a run ended is written once, and giving
// it up turns a job the consumers completed into exit 1 with the job still executing. An attempt
// needs only one connection that lives through a few statements, so it keeps trying for longer.
const runEndBudget = 60 * time.Second

// ConnectionLost reports whether err is the loss of the statement's connection rather than the
// server's answer to the statement: a broken socket, a session terminated by an administrator or
// a server shutting down, a connection that could not be made. The statement may or may not
// have been applied. Context ends are not: the caller gave up.
func ConnectionLost(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		// Class 08 is connection exception; 57P01-57P03 are admin_shutdown, crash_shutdown and
		// cannot_connect_now.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return true
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)
}

// retryLostConnection runs an idempotent statement, and runs it again while it fails with a lost
// connection, for up to lostConnectionBudget. The pool hands out another connection each time
// (a broken one is discarded when it fails). lost says whether any attempt lost its connection,
// so a caller whose statement says "nothing matched" can tell "applied by an earlier attempt".
func retryLostConnection(ctx context.Context, statement func() error) (lost bool, err error) {
	return retryLostConnectionFor(ctx, lostConnectionBudget, statement)
}

// retryLostConnectionFor is retryLostConnection with its own budget.
func retryLostConnectionFor(ctx context.Context, budget time.Duration, statement func() error) (lost bool, err error) {
	wait, deadline := lostConnectionFirstWait, time.Now().Add(budget)
	for {
		err = statement()
		if !ConnectionLost(err) {
			return lost, err
		}
		lost = true
		if time.Now().Add(wait).After(deadline) {
			return lost, err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return lost, err
		}
		wait = min(2*wait, lostConnectionMaxWait)
	}
}

// inTx runs fn in one transaction. When an attempt loses its connection, the transaction was
// rolled back, or committed with its answer lost: applied (when not nil) is asked which, and
// unless it was applied fn runs again in a new transaction on a new connection, for up to
// runEndBudget. fn must do the same thing each time it runs; with applied
// nil it must also be safe to apply twice.
func (s *Store) inTx(ctx context.Context, applied func(context.Context) (bool, error), fn func(pgx.Tx) error) error {
	attempted := false
	_, err := retryLostConnectionFor(ctx, runEndBudget, func() error {
		// Only a lost connection brings this back, so a second call follows a lost attempt.
		if attempted && applied != nil {
			done, err := applied(ctx)
			if err != nil || done {
				return err
			}
		}
		attempted = true
		return pgx.BeginFunc(ctx, s.pool, fn)
	})
	return err
}
