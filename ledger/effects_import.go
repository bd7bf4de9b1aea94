package ledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// EffectsImport takes EffectRow, the type every read of an effects row returns: a bulk import
// (a backfill of an existing service's history, the demo and tests) writes the columns below and
// leaves the rest to their defaults. Live consumers write rows through the consumer SDK instead.
var effectsImportColumns = []string{
	"consumer", "event_id", "effect_version", "state", "request_hash", "request_hash_alg",
	"result_hash", "result_body", "effect_count", "lease_owner", "lease_expires_at", "job_id",
}

// EffectsImport copies rows into the effects table with one COPY: the columns of
// effectsImportColumns; the lease's liveness, dates and counters an EffectRow also carries are
// the database's.
func (s *Store) EffectsImport(ctx context.Context, rows []EffectRow) (int64, error) {
	n, err := s.pool.CopyFrom(ctx, pgx.Identifier{"effects"}, effectsImportColumns, pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
		e := rows[i]
		var body any
		if len(e.ResultBody) > 0 {
			body = string(e.ResultBody)
		}
		return []any{e.Consumer, e.EventID, e.EffectVersion, e.State, e.RequestHash, e.RequestHashAlg,
			nullable(e.ResultHash), body, e.EffectCount, nullable(e.LeaseOwner), e.LeaseExpiresAt, nullable(e.JobID)}, nil
	}))
	if err != nil {
		return n, fmt.Errorf("import %d effects: %w", len(rows), translate(err))
	}
	return n, nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
