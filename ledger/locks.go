package ledger

import (
	"context"
	"fmt"
	"time"
)

// Session advisory locks are keyed by text ("replayctl.shadow:<job>"); hashtextextended gives
// PostgreSQL's 64-bit key space.
const (
	sessionLockTry    = `select pg_try_advisory_lock(hashtextextended($1, 0))`
	sessionLockUnlock = `select pg_advisory_unlock(hashtextextended($1, 0))`
)

// sessionLock takes the session advisory lock key on a connection of its own, held until release
// is called or the process dies (the session ends with it). It does not wait: a lock already held
// returns held. action names the attempt in errors ("lock job j-1 for shadow").
func (s *Store) sessionLock(ctx context.Context, key, action string, held error) (release func(), err error) {
	conn, err := s.Pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: acquire a ledger connection: %w", action, err)
	}
	var locked bool
	if err := conn.QueryRow(ctx, sessionLockTry, key).Scan(&locked); err != nil {
		conn.Release()
		return nil, fmt.Errorf("%s: %w", action, err)
	}
	if !locked {
		conn.Release()
		return nil, held
	}
	return func() {
		// The caller's context may be cancelled by now; the unlock must still run, and a failed
		// one is undone by closing the connection, which ends the session and its locks.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, sessionLockUnlock, key); err != nil {
			conn.Conn().Close(ctx)
		}
		conn.Release()
	}, nil
}
