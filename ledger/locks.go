package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replayctl/replayctl/internal/every"
)

// Session advisory locks are keyed by text ("replayctl.shadow:<job>") under the current schema:
// advisory locks are database-wide, and two ledgers in one database (the demo beside a real one,
// or test runs side by side) must never refuse or wait on each other's jobs. hashtextextended
// gives PostgreSQL's 64-bit key space.
const (
	sessionLockTry    = `select pg_try_advisory_lock(hashtextextended(current_schema() || ':' || $1, 0))`
	sessionLockUnlock = `select pg_advisory_unlock(hashtextextended(current_schema() || ':' || $1, 0))`
)

// lockCheckTimeout bounds one check of a held lock (a ping, or taking the lock again), so a
// hung connection is treated as a lost lock instead of stalling the run that holds it.
const lockCheckTimeout = 5 * time.Second

// ErrLockLost means a session lock went with its connection (its backend was terminated, the
// server restarted, the network failed) and could not be taken again: another session holds it
// now, or the ledger cannot be reached.
var ErrLockLost = errors.New("session lock lost")

// SessionLock is a session advisory lock held on a connection of its own. PostgreSQL keeps it
// exactly as long as that session: a terminated backend or a failover releases it without the
// holder noticing, so a long-running holder calls Keep.
type SessionLock struct {
	store  *Store
	key    string
	action string
	held   error

	mu   sync.Mutex
	conn *pgxpool.Conn
}

// takeSessionLock takes the session advisory lock key without waiting: a lock already held
// returns held. action names the attempt in errors ("lock job j-1 for shadow").
func (s *Store) takeSessionLock(ctx context.Context, key, action string, held error) (*SessionLock, error) {
	l := &SessionLock{store: s, key: key, action: action, held: held}
	conn, err := l.acquire(ctx)
	if err != nil {
		return nil, err
	}
	l.conn = conn
	return l, nil
}

// sessionLock is takeSessionLock for holders that only release the lock.
func (s *Store) sessionLock(ctx context.Context, key, action string, held error) (release func(), err error) {
	l, err := s.takeSessionLock(ctx, key, action, held)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// acquire takes the lock on a new pooled connection, returned held.
func (l *SessionLock) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	conn, err := l.store.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: acquire a ledger connection: %w", l.action, err)
	}
	var locked bool
	if err := conn.QueryRow(ctx, sessionLockTry, l.key).Scan(&locked); err != nil {
		conn.Release()
		return nil, fmt.Errorf("%s: %w", l.action, err)
	}
	if !locked {
		conn.Release()
		return nil, l.held
	}
	return conn, nil
}

// Keep checks that the lock is still held, by pinging its session. When the session is gone,
// the lock went with it: Keep takes it again on a new connection and reports retaken, so a
// backend killed by an administrator or a failover is ridden out. It returns an error matching
// ErrLockLost when that fails: another session took the lock in between (the error also matches
// the lock's held error), or the ledger cannot be reached; the holder must then stop what the
// lock protects.
func (l *SessionLock) Keep(ctx context.Context) (retaken bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return false, fmt.Errorf("%w: %s: the lock was released", ErrLockLost, l.action)
	}
	pingCtx, cancel := context.WithTimeout(ctx, lockCheckTimeout)
	defer cancel()
	pingErr := l.conn.Ping(pingCtx)
	if pingErr == nil {
		return false, nil
	}
	// Closing makes sure the old session ends (and its lock with it) even if the ping failed on a
	// session that is still alive, so the lock can never be held twice by this holder.
	l.conn.Conn().Close(pingCtx)
	l.conn.Release()
	l.conn = nil
	conn, err := l.retake(ctx)
	if err != nil {
		return false, fmt.Errorf("%w: %s: its ledger connection failed (%v) and the lock could not be taken again: %w", ErrLockLost, l.action, pingErr, err)
	}
	l.conn = conn
	return true, nil
}

// retake takes the lock again after its session was lost. While the ledger cannot be reached it
// tries for as long as an idempotent statement is sent again (lostConnectionBudget): a server
// restarted or failed over is back within seconds, and while it is down no other session can take
// the lock either. A lock another session holds now, or any answer but a lost connection, ends it
// at once.
func (l *SessionLock) retake(ctx context.Context) (*pgxpool.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, lostConnectionBudget)
	defer cancel()
	// The pool may hand out idle connections killed along with ours, every one of them when all
	// the holder's sessions were terminated at once; each that fails is discarded, and the budget
	// outlasts many more attempts than the pool holds connections, so a fresh one comes.
	for attempt := 1; ; attempt++ {
		conn, err := l.acquire(ctx)
		if err == nil || errors.Is(err, l.held) || !ConnectionLost(err) {
			return conn, err
		}
		select {
		case <-time.After(min(time.Duration(attempt)*100*time.Millisecond, 300*time.Millisecond)):
		case <-ctx.Done():
			return nil, err
		}
	}
}

// Hold calls Keep every interval until the returned stop is called, and calls onRetaken (if not
// nil) after each lost connection it rode out. When Keep fails, Hold cancels the returned context
// with Keep's error (context.Cause; it matches ErrLockLost), so the holder stops what the lock
// protects. A cancelled ctx ends the checks without reading as a lost lock.
func (l *SessionLock) Hold(ctx context.Context, interval time.Duration, onRetaken func()) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := every.Interval(ctx, interval, func() bool {
		// An interrupt must not read as a lost lock: the check runs to its own timeout.
		retaken, err := l.Keep(context.WithoutCancel(ctx))
		switch {
		case err != nil:
			cancel(err)
			return false
		case retaken && onRetaken != nil:
			onRetaken()
		}
		return true
	})
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// Release unlocks and returns the connection. It is safe to call more than once.
func (l *SessionLock) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return
	}
	// The caller's context may be cancelled by now; the unlock must still run, and a failed one
	// is undone by closing the connection, which ends the session and its locks.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := l.conn.Exec(ctx, sessionLockUnlock, l.key); err != nil {
		l.conn.Conn().Close(ctx)
	}
	l.conn.Release()
	l.conn = nil
}

// ExecuteLockKept is ExecuteLock for the executor itself: the returned lock's Keep tells a long
// run whether it still holds the job, and takes the lock again after a lost connection.
func (s *Store) ExecuteLockKept(ctx context.Context, jobID string) (*SessionLock, error) {
	return s.takeSessionLock(ctx, executeLockKey(jobID), executeLockAction(jobID), executeRunning(jobID))
}

func executeLockKey(jobID string) string    { return "replayctl.execute:" + jobID }
func executeLockAction(jobID string) string { return fmt.Sprintf("lock job %s for execute", jobID) }

func executeRunning(jobID string) error {
	return fmt.Errorf("%w: job %s is being executed by another replayctl; wait for it, or stop it (it can be paused with `replayctl pause %s`)",
		ErrExecuteRunning, jobID, jobID)
}

// ShadowLockKept is ShadowLock for the shadow run itself, whose Hold stops a long pass that lost
// the lock instead of letting a second run interleave its outcomes.
func (s *Store) ShadowLockKept(ctx context.Context, jobID string) (*SessionLock, error) {
	return s.takeSessionLock(ctx, shadowLockKey(jobID), shadowLockAction(jobID), shadowRunning(jobID))
}

func shadowLockKey(jobID string) string    { return "replayctl.shadow:" + jobID }
func shadowLockAction(jobID string) string { return fmt.Sprintf("lock job %s for shadow", jobID) }

func shadowRunning(jobID string) error {
	return fmt.Errorf("%w: job %s is being shadowed by another replayctl; wait for it to finish or stop it", ErrShadowRunning, jobID)
}
