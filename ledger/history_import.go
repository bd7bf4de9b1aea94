package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ImportedEffect is one event another system already handled, as `replayctl ledger import` writes
// it: a completed row (the effect happened) or an uncertain one (the old system does not know),
// never a row the SDK could claim and run again.
type ImportedEffect struct {
	EventID       string
	EffectVersion int
	// State is "completed" or "uncertain".
	State string
	// Business marks a completed row whose outcome was a terminal business failure.
	Business bool
	// RequestHash and RequestHashAlg are the payload's fingerprint; RequestHashAlg is
	// fingerprint.AlgorithmNone when the old system kept none.
	RequestHash, RequestHashAlg string
	ResultHash                  string
	EffectCount                 int
	ProcessedAt                 time.Time
	// ReplayUntil and EvidenceUntil are nil when neither the line nor the consumer's policy gave one.
	ReplayUntil, EvidenceUntil *time.Time
}

// ImportBatchResult counts what one batch wrote.
type ImportBatchResult struct {
	// Inserted rows are new; Present were already in the ledger (a live row, an earlier run of the
	// same import, or a repeat in the file) and were left as they are.
	Inserted, Present int64
}

// importedBy is completed_by of an imported row: no instance of the consumer completed it.
const importedBy = "ledger import"

var importStagingColumns = []string{"event_id", "effect_version", "state", "outcome_kind", "request_hash",
	"request_hash_alg", "result_hash", "effect_count", "calls_started", "processed_at", "replay_until", "evidence_until"}

const importStagingCreate = `
create temp table import_rows (
    event_id text, effect_version integer, state text, outcome_kind text, request_hash text,
    request_hash_alg text, result_hash text, effect_count integer, calls_started integer,
    processed_at timestamptz, replay_until timestamptz, evidence_until timestamptz
) on commit drop`

// A row already in the ledger wins: import never overwrites what a consumer recorded. The staged
// rows are joined by primary key, so the cost follows the batch, not the ledger.
const importStagingInsert = `
insert into effects (consumer, event_id, effect_version, state, outcome_kind, request_hash, request_hash_alg,
                     result_hash, effect_count, calls_started, created_at, updated_at, replay_until, evidence_until,
                     completed_by)
select $1, event_id, effect_version, state, outcome_kind, request_hash, request_hash_alg, result_hash,
       effect_count, calls_started, processed_at, processed_at, replay_until, evidence_until, '` + importedBy + `'
  from import_rows
on conflict (consumer, event_id, effect_version) do nothing`

const consumerHistoryExtend = `
insert into consumer_history as h (consumer, imported_from, imported_rows, last_import_by)
values ($1, $2, $3, $4)
on conflict (consumer) do update
   set imported_from = least(h.imported_from, excluded.imported_from),
       imported_rows = h.imported_rows + excluded.imported_rows,
       last_import_at = now(), last_import_by = excluded.last_import_by`

// ImportEffects writes one batch of consumer's imported history in one transaction: COPY into a
// staging table, one insert that skips every key the ledger already holds, and the consumer's
// history start moved back to the batch's oldest date. With dryRun the transaction is rolled back,
// so the counts say what a real run would write. A batch commits whole or not at all, which is
// what makes an interrupted import safe to run again.
func (s *Store) ImportEffects(ctx context.Context, consumer, actor string, rows []ImportedEffect, dryRun bool) (ImportBatchResult, error) {
	var res ImportBatchResult
	if len(rows) == 0 {
		return res, nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("import into consumer %s: %w", consumer, translate(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, importStagingCreate); err != nil {
		return res, fmt.Errorf("import into consumer %s: stage: %w", consumer, translate(err))
	}
	oldest := rows[0].ProcessedAt
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"import_rows"}, importStagingColumns, pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
		r := rows[i]
		oldest = minTime(oldest, r.ProcessedAt)
		var outcome any
		if r.Business {
			outcome = "business"
		}
		callsStarted := r.EffectCount
		if r.State == "uncertain" {
			// A call may have started: the reconcile worker and a person judge it, never a rerun.
			callsStarted = max(callsStarted, 1)
		}
		return []any{r.EventID, r.EffectVersion, r.State, outcome, r.RequestHash, r.RequestHashAlg, nullable(r.ResultHash),
			r.EffectCount, callsStarted, r.ProcessedAt, r.ReplayUntil, r.EvidenceUntil}, nil
	})); err != nil {
		return res, fmt.Errorf("import into consumer %s: copy %d rows: %w", consumer, len(rows), translate(err))
	}
	tag, err := tx.Exec(ctx, importStagingInsert, consumer)
	if err != nil {
		return res, fmt.Errorf("import into consumer %s: %w", consumer, translate(err))
	}
	res.Inserted = tag.RowsAffected()
	res.Present = int64(len(rows)) - res.Inserted
	if _, err := tx.Exec(ctx, consumerHistoryExtend, consumer, oldest, res.Inserted, actor); err != nil {
		return res, fmt.Errorf("import into consumer %s: record the history start: %w", consumer, translate(err))
	}
	if dryRun {
		return res, nil
	}
	if err := tx.Commit(ctx); err != nil {
		return ImportBatchResult{}, fmt.Errorf("import into consumer %s: commit: %w", consumer, translate(err))
	}
	return res, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// The SDK registers its fingerprint algorithm before its first claim, so the first registration is
// when replayctl began recording the consumer; an import reaches further back.
const consumerHistoryStart = `
select least((select min(first_registered_at) from fingerprint_algorithms where consumer = $1),
             (select imported_from from consumer_history where consumer = $1))`

// ConsumerHistoryStart returns the oldest time consumer's ledger rows can speak for: the SDK's
// first registration of the consumer or, when earlier, the oldest imported row. ok is false when
// neither is known (a consumer whose SDK predates the fingerprint registry).
func (s *Store) ConsumerHistoryStart(ctx context.Context, consumer string) (start time.Time, ok bool, err error) {
	var t *time.Time
	if err := s.pool.QueryRow(ctx, consumerHistoryStart, consumer).Scan(&t); err != nil {
		return time.Time{}, false, fmt.Errorf("read the history start of consumer %s: %w", consumer, translate(err))
	}
	if t == nil {
		return time.Time{}, false, nil
	}
	return *t, true, nil
}
