package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

const jobTargetsAnySubject = `select original_subject from job_targets where job_id = $1 limit 1`

// JobTargetsAnySubject returns the original subject of one of jobID's targets, whatever its
// status, or "" for a job without targets: where the job's replays go, when none is left to
// publish. A read, so it is sent again after a lost connection.
func (s *Store) JobTargetsAnySubject(ctx context.Context, jobID string) (string, error) {
	var subject string
	_, err := retryLostConnection(ctx, func() error {
		return s.pool.QueryRow(ctx, jobTargetsAnySubject, jobID).Scan(&subject)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read a target subject of job %s: %w", jobID, err)
	}
	return subject, nil
}
