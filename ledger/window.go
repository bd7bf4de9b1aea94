package ledger

import (
	"context"
	"fmt"
)

// The settled part of effectsJobCounts alone, over the same index: what execute's in-flight
// window needs between its polls, without the job_targets count, the sums and the writes of a
// full poll.
const effectsJobSettled = `
select count(*)
  from effects
 where consumer = $1 and effect_version = $2 and job_id = $3
   and state in ('completed', 'reconciled', 'uncertain')`

// EffectsJobSettled counts jobID's rows of consumer under version that reached an outcome, the
// figure JobEffectCounts.Settled gives. It is not sent again after a lost connection: its caller
// asks again soon, and the next full poll reads the same figure.
func (s *Store) EffectsJobSettled(ctx context.Context, consumer string, version int, jobID string) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, effectsJobSettled, consumer, version, jobID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count the settled ledger rows of job %s (consumer %s, version %d): %w", jobID, consumer, version, err)
	}
	return n, nil
}
