package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrFingerprintOptionsClash means a consumer registered a fingerprint algorithm name the ledger
// already holds with other options: two option sets share an 8-hex digest, and their hashes must
// never be compared as if they were one algorithm.
var ErrFingerprintOptionsClash = errors.New("fingerprint algorithm already registered with other options")

// FingerprintAlgorithm is one algorithm a consumer has written request hashes with.
type FingerprintAlgorithm struct {
	Algorithm string
	// Options is the canonical encoding of the algorithm's options (fingerprint.Options.Encode).
	Options           string
	FirstRegisteredAt time.Time
	LastRegisteredAt  time.Time
}

// The update arm runs only when the stored options are the same, so a digest clash writes nothing
// and is reported.
const fingerprintAlgorithmsRegister = `
insert into fingerprint_algorithms as f (consumer, algorithm, options) values ($1, $2, $3)
on conflict (consumer, algorithm) do update set last_registered_at = now()
 where f.options = excluded.options`

// FingerprintAlgorithmRegister records that consumer writes request hashes under algorithm with
// options, and makes it the consumer's current algorithm. It fails with ErrFingerprintOptionsClash
// when the name is already registered with other options.
func (s *Store) FingerprintAlgorithmRegister(ctx context.Context, consumer, algorithm, options string) error {
	tag, err := s.pool.Exec(ctx, fingerprintAlgorithmsRegister, consumer, algorithm, options)
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == pgUndefinedTable {
		return fmt.Errorf("%w: register fingerprint algorithm %s of consumer %s: the ledger has no fingerprint_algorithms table (migration 0008): run `replayctl migrate`",
			ErrSchemaOutdated, algorithm, consumer)
	}
	if err != nil {
		return fmt.Errorf("register fingerprint algorithm %s of consumer %s: %w", algorithm, consumer, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: consumer %s, algorithm %s: change the fingerprint options (or their order of patterns) so their digest differs",
			ErrFingerprintOptionsClash, consumer, algorithm)
	}
	return nil
}

const fingerprintAlgorithmsOfConsumer = `
select algorithm, options, first_registered_at, last_registered_at
  from fingerprint_algorithms
 where consumer = $1
 order by last_registered_at desc, algorithm`

// FingerprintAlgorithms returns the algorithms consumer registered, the current one (registered
// last) first; none for a consumer whose SDK predates the registry (it writes canonical-json-v1).
func (s *Store) FingerprintAlgorithms(ctx context.Context, consumer string) ([]FingerprintAlgorithm, error) {
	rows, err := s.pool.Query(ctx, fingerprintAlgorithmsOfConsumer, consumer)
	if err != nil {
		return nil, fmt.Errorf("read the fingerprint algorithms of consumer %s: %w", consumer, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[FingerprintAlgorithm])
	if err != nil {
		return nil, fmt.Errorf("read the fingerprint algorithms of consumer %s: %w", consumer, err)
	}
	return out, nil
}
