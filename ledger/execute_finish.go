package ledger

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/jobtype"
)

// ExecuteEnd is what recording the end of a run changes: the job's targets, its status (by
// Transition) and effect version, and the audit entry.
type ExecuteEnd struct {
	JobID         string
	Consumer      string
	EffectVersion int
	Transition    JobTransition
	Audit         AuditEntry
}

// ExecuteComplete records a run whose every target settled: the targets take their ledger
// outcome, the job makes e.Transition (to completed), its effect version goes from executing to
// completed, and the audit entry is appended, in one transaction. A lost connection sends it
// again unless the job already made the transition.
func (s *Store) ExecuteComplete(ctx context.Context, e ExecuteEnd) error {
	return s.inTx(ctx, s.jobIs(e.JobID, e.Transition.To, ""), func(tx pgx.Tx) error {
		if _, err := JobTargetsSettle(ctx, tx, e.JobID, e.Consumer, e.EffectVersion); err != nil {
			return err
		}
		if err := JobsTransition(ctx, tx, e.Transition); err != nil {
			return err
		}
		if _, err := EffectVersionsSetState(ctx, tx, e.Consumer, e.EffectVersion, e.JobID, []string{EffectVersionExecuting}, EffectVersionCompleted); err != nil {
			return err
		}
		return AuditInsert(ctx, tx, e.Audit)
	})
}

// ExecuteCancelled records a cancelled run: the targets take the outcome they reached and the
// audit entry is appended, in one transaction; the cancel already set the job's status, so
// e.Transition is not used. Settling twice changes nothing, so a lost connection sends it again
// (the audit entry may then be written twice).
func (s *Store) ExecuteCancelled(ctx context.Context, e ExecuteEnd) error {
	return s.inTx(ctx, nil, func(tx pgx.Tx) error {
		if _, err := JobTargetsSettle(ctx, tx, e.JobID, e.Consumer, e.EffectVersion); err != nil {
			return err
		}
		return AuditInsert(ctx, tx, e.Audit)
	})
}

// ExecuteGuardStopped records a run a guard stopped: the job makes e.Transition (to paused, by the
// guard) and the audit entry is appended, in one transaction; targets and version stay as they
// are, for the run that continues it. A lost connection sends it again unless the job already
// made the transition, by e.Transition.By.
func (s *Store) ExecuteGuardStopped(ctx context.Context, e ExecuteEnd) error {
	return s.inTx(ctx, s.jobIs(e.JobID, e.Transition.To, e.Transition.By), func(tx pgx.Tx) error {
		if err := JobsTransition(ctx, tx, e.Transition); err != nil {
			return err
		}
		return AuditInsert(ctx, tx, e.Audit)
	})
}

// jobIs is whether job id's status is now status (set by by, when by is not empty): after a lost
// connection, whether the transaction that sets it committed.
func (s *Store) jobIs(id string, status jobtype.Status, by string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		job, err := s.JobsGet(ctx, id)
		if err != nil {
			return false, err
		}
		return job.Status == status && (by == "" || job.StatusBy == by), nil
	}
}
