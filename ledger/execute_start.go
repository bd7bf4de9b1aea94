package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

var (
	// ErrConsumerBusy means another job of the consumer is executing or paused; the
	// *ConsumerBusyError names it.
	ErrConsumerBusy = errors.New("another job of the consumer is active")

	// ErrVersionTaken means the effect version a run was to register is registered already,
	// by another job since the caller last looked.
	ErrVersionTaken = errors.New("effect version already registered")
)

// ConsumerBusyError is ExecuteStart's refusal while another job of the consumer is active.
type ConsumerBusyError struct{ Other Job }

// Error names the other job.
func (e *ConsumerBusyError) Error() string {
	return fmt.Sprintf("job %s of consumer %s is %s", e.Other.ID, e.Other.Consumer, e.Other.Status)
}

// Is makes a ConsumerBusyError match ErrConsumerBusy.
func (e *ConsumerBusyError) Is(target error) bool { return target == ErrConsumerBusy }

// ExecuteStart is what a run's start changes: the job's status, its effect version, its drifted
// targets and the audit entry.
type ExecuteStart struct {
	JobID    string
	Consumer string
	// Transition moves job JobID to executing from the status the caller's gates saw (the job
	// package's job.TransitionFrom): a job that left it since is refused.
	Transition JobTransition
	Actor      string
	// EffectVersion is registered as executing for the job unless Continue: a continued run
	// registered it when it first started.
	EffectVersion int
	Continue      bool
	// SkipDrifted marks the targets whose events changed since the plan skipped, comparing
	// fingerprints made with HashAlgorithm.
	SkipDrifted   bool
	HashAlgorithm string
	// Pace is the rate and in-flight cap the run starts with, stored as the job's (nil fields
	// leave the stored ones), so `replayctl pace` changes what is in force.
	Pace  JobPace
	Audit AuditEntry
}

// ExecuteStart moves the job to executing, registers its effect version, skips its drifted
// targets and appends the audit entry, all in one transaction under the consumer's execution
// lock, so two jobs of one consumer never both start. Another active job of the consumer is a
// *ConsumerBusyError (ErrConsumerBusy); a job no longer in one of Transition.From matches ErrJobStatus; a
// version registered since matches ErrVersionTaken. Nothing is changed then.
func (s *Store) ExecuteStart(ctx context.Context, st ExecuteStart) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := LockConsumerExecutions(ctx, tx, st.Consumer); err != nil {
			return err
		}
		others, err := JobsActiveForConsumer(ctx, tx, st.Consumer, st.JobID)
		if err != nil {
			return err
		}
		if len(others) > 0 {
			return &ConsumerBusyError{Other: others[0]}
		}
		err = JobsTransition(ctx, tx, st.Transition)
		if errors.Is(err, ErrJobStatus) {
			return err
		}
		if err != nil {
			return fmt.Errorf("start job %s: %w", st.JobID, err)
		}
		if !st.Continue {
			err := EffectVersionsRegister(ctx, tx, st.Consumer, st.EffectVersion, EffectVersionExecuting, st.JobID, st.Actor)
			if errors.Is(err, ErrConflict) {
				return fmt.Errorf("%w: %w", ErrVersionTaken, err)
			}
			if err != nil {
				return err
			}
		}
		if err := jobsStorePace(ctx, tx, st.JobID, st.Pace); err != nil {
			return err
		}
		if st.SkipDrifted {
			if _, err := JobTargetsSkipDrifted(ctx, tx, st.JobID, st.Consumer, st.EffectVersion, st.HashAlgorithm); err != nil {
				return err
			}
		}
		return AuditInsert(ctx, tx, st.Audit)
	})
}
