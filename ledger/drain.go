package ledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// jobTargetsDrainPage is a keyset page, by stream sequence, of a job's completed targets with
// every stream sequence their messages had in the scan (source_seqs, or stream_seq alone).
const jobTargetsDrainPage = `
select stream_seq, coalesce(source_seqs, array[stream_seq])
  from job_targets
 where job_id = $1 and status = 'completed' and stream_seq > $2
 order by stream_seq
 limit $3`

// JobTargetsCompletedSeqs calls fn with the stream sequences of each page of up to pageSize
// completed targets of jobID, in stream order: every message of a target (a DLQ that received
// the event more than once holds several). A page at a time, so a million-target job is never
// held in memory.
func (s *Store) JobTargetsCompletedSeqs(ctx context.Context, jobID string, pageSize int, fn func(seqs []uint64) error) error {
	var after int64
	for {
		rows, err := s.pool.Query(ctx, jobTargetsDrainPage, jobID, after, pageSize)
		if err != nil {
			return fmt.Errorf("read the completed targets of job %s: %w", jobID, err)
		}
		var page []uint64
		var seq int64
		var seqs []int64
		n := 0
		_, err = pgx.ForEachRow(rows, []any{&seq, &seqs}, func() error {
			n++
			after = seq
			for _, s := range seqs {
				page = append(page, uint64(s))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the completed targets of job %s: %w", jobID, err)
		}
		if n == 0 {
			return nil
		}
		if err := fn(page); err != nil {
			return err
		}
		if n < pageSize {
			return nil
		}
	}
}

// AuditAppend appends e to the audit log in its own statement.
func (s *Store) AuditAppend(ctx context.Context, e AuditEntry) error {
	return AuditInsert(ctx, s.pool, e)
}
