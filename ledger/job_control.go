package ledger

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// JobControl is an operator's change of a job's status (pause, resume, cancel) and what goes with
// it.
type JobControl struct {
	Transition JobTransition
	// EndReplay also stops the consumer SDK accepting the job's effect version (an executing
	// registration becomes cancelled) and copies the outcomes reached so far onto its targets:
	// a cancel. Consumer and EffectVersion name the version.
	EndReplay     bool
	Consumer      string
	EffectVersion int
	Audit         AuditEntry
}

// JobControl applies c in one transaction: the status change, for a cancel the version and the
// targets, and the audit entry. A job not in one of c.Transition.From matches ErrJobStatus and
// nothing is changed; a missing job matches ErrJobNotFound.
func (s *Store) JobControl(ctx context.Context, c JobControl) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := JobsTransition(ctx, tx, c.Transition); err != nil {
			return err
		}
		if c.EndReplay {
			id := c.Transition.ID
			if _, err := EffectVersionsSetState(ctx, tx, c.Consumer, c.EffectVersion, id,
				[]string{EffectVersionExecuting}, EffectVersionCancelled); err != nil {
				return err
			}
			if _, err := JobTargetsSettle(ctx, tx, id, c.Consumer, c.EffectVersion); err != nil {
				return err
			}
		}
		return AuditInsert(ctx, tx, c.Audit)
	})
}

// ExecutorAttached reports whether an executor holds jobID's lock, by trying to take it (and
// letting it go at once).
func (s *Store) ExecutorAttached(ctx context.Context, jobID string) (bool, error) {
	release, err := s.ExecuteLock(ctx, jobID)
	if errors.Is(err, ErrExecuteRunning) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	release()
	return false, nil
}
