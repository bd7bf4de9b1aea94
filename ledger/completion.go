package ledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// jobIDsByPrefix lists the newest job IDs starting with $1 (starts_with: no pattern to escape).
const jobIDsByPrefix = `select id from jobs where starts_with(id, $1) order by created_at desc, id limit $2`

// JobIDsByPrefix returns at most limit job IDs starting with prefix, newest first: what a shell
// completes after `replayctl status <TAB>`.
func (s *Store) JobIDsByPrefix(ctx context.Context, prefix string, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, jobIDsByPrefix, prefix, limit)
	if err != nil {
		return nil, fmt.Errorf("list job IDs starting with %q: %w", prefix, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list job IDs starting with %q: %w", prefix, err)
	}
	return ids, nil
}

// KnownConsumers returns every consumer the ledger holds effects, versions or jobs for, sorted:
// the names CheckConsumer accepts, and what a shell completes after --consumer.
func (s *Store) KnownConsumers(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, knownConsumers)
	if err != nil {
		return nil, fmt.Errorf("list the consumers in the ledger: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list the consumers in the ledger: %w", err)
	}
	return names, nil
}
