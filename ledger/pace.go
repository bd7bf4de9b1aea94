package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/jobtype"
)

// PaceChange is a change of a job's pace by an operator: nil fields keep their value.
type PaceChange struct {
	JobID string
	Pace  JobPace
	// From are the statuses the job may be in; another is refused with ErrJobStatus.
	From   []jobtype.Status
	Actor  string
	Reason string
	At     time.Time
}

// PaceChanged is what JobsSetPace did: the pace before and after, and the job's status.
type PaceChanged struct {
	Status         jobtype.Status
	ManifestDigest string
	Before, After  JobPace
}

const jobsPaceLock = `select status, manifest_digest, pace_rate, pace_max_in_flight from jobs where id = $1 for update`

const jobsPaceSet = `
update jobs set pace_rate = coalesce($2, pace_rate), pace_max_in_flight = coalesce($3, pace_max_in_flight)
 where id = $1
returning pace_rate, pace_max_in_flight`

// JobsSetPace changes c.JobID's pace and appends the job.pace audit entry with the values before
// and after, in one transaction; the row lock orders it with a concurrent pace or transition. A
// missing job matches ErrJobNotFound, one in a status not in c.From ErrJobStatus (nothing changed).
func (s *Store) JobsSetPace(ctx context.Context, c PaceChange) (PaceChanged, error) {
	var res PaceChanged
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, jobsPaceLock, c.JobID).Scan(&res.Status, &res.ManifestDigest, &res.Before.Rate, &res.Before.MaxInFlight)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: the ledger has no job %q; `replayctl jobs` lists the jobs it has (a typo in the ID?), and `replayctl plan` records a new one", ErrJobNotFound, c.JobID)
		}
		if err != nil {
			return err
		}
		if !slices.Contains(c.From, res.Status) {
			return fmt.Errorf("%w: job %s is %s, not one of %v, so its pace cannot change", ErrJobStatus, c.JobID, res.Status, c.From)
		}
		if err := tx.QueryRow(ctx, jobsPaceSet, c.JobID, c.Pace.Rate, c.Pace.MaxInFlight).Scan(&res.After.Rate, &res.After.MaxInFlight); err != nil {
			return err
		}
		return AuditInsert(ctx, tx, AuditEntry{At: c.At, Actor: c.Actor, JobID: c.JobID, ManifestDigest: res.ManifestDigest,
			Action: "job.pace", Details: map[string]any{"from": res.Before, "to": res.After, "reason": c.Reason, "status": res.Status}})
	})
	if err != nil {
		return PaceChanged{}, fmt.Errorf("pace job %s: %w", c.JobID, err)
	}
	return res, nil
}

// jobsStorePace sets jobID's pace through q; nil fields keep their value.
func jobsStorePace(ctx context.Context, q Querier, jobID string, p JobPace) error {
	if p.Rate == nil && p.MaxInFlight == nil {
		return nil
	}
	var rate *float64
	var inFlight *int
	if err := q.QueryRow(ctx, jobsPaceSet, jobID, p.Rate, p.MaxInFlight).Scan(&rate, &inFlight); err != nil {
		return fmt.Errorf("store the pace of job %s: %w", jobID, err)
	}
	return nil
}
