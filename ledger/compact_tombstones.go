package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/fingerprint"
)

// A compact tombstone (migration 0035) is what stays of an expired row after prune's compaction
// age: the hashed key of its event, its version, its consumer's key, its evidence_until and flags.
// The readers that look an event up (the SDK's reads, plan) render it as an expired effects row of
// that version, with the request hash of an imported row without a fingerprint (none): its
// payload was not kept, so every payload matches and the expired evidence goes to the consumer's
// look-up. The SDK's claim does not look at them: it claims only after a read, and a read that
// met the event's tombstone, whole or compact, goes to the look-up instead (a tombstone is only
// ever made from a settled row, which the read would have met as settled).
const (
	compactFlagCompleted      = 1
	compactFlagReconciled     = 2
	compactFlagWriteForbidden = 4
	compactFlagBusiness       = 8
)

// tombstoneKey is SQL's effect_tombstone_key(consumer, eventID) (migration 0035): the first 8
// bytes of sha256(consumer, 0x1f, eventID), big-endian, as a signed 64-bit integer. The SDK's
// statements take it as a parameter: hashed in SQL on every read it cost a quarter of the read
// (pgbench at 10 M rows: 0.16 against 0.12-0.14 ms).
func tombstoneKey(consumer, eventID string) int64 {
	sum := sha256.Sum256([]byte(consumer + "\x1f" + eventID))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// compactTombstone is one row of effect_tombstones read for the SDK; index is the position of
// its key in the keys the read asked for.
type compactTombstone struct {
	index         int
	effectVersion int
	evidenceUntil time.Time
	flags         int16
}

// compactTombstonesByKey reads the compact tombstones of the keys $1, each with its key's position
// (0-based). A statement of its own, sent in the same batch as the read of effects: a union in one
// statement made the SDK's read slower to plan on every execution (its connections plan each one,
// sdkPlannerSettings), and the consumer with it (docs/benchmarks.md, "Compact tombstones").
const compactTombstonesByKey = `
select k.i - 1, t.effect_version, t.evidence_until::timestamp at time zone 'UTC', t.flags
  from unnest($1::bigint[]) with ordinality as k(key, i)
  join effect_tombstones t on t.key = k.key`

// readEffectRows sends query (effects rows, scanned by scanEffectRow) with args, and the read of
// the compact tombstones of keys, in one batch: one round trip.
func readEffectRows(ctx context.Context, q BatchQuerier, keys []int64, query string, args ...any) ([]EffectRow, []compactTombstone, error) {
	var rows []EffectRow
	var compact []compactTombstone
	b := &pgx.Batch{}
	b.Queue(query, args...).Query(func(r pgx.Rows) error {
		var err error
		rows, err = pgx.CollectRows(r, scanEffectRow)
		return err
	})
	b.Queue(compactTombstonesByKey, keys).Query(func(r pgx.Rows) error {
		var c compactTombstone
		_, err := pgx.ForEachRow(r, []any{&c.index, &c.effectVersion, &c.evidenceUntil, &c.flags}, func() error {
			compact = append(compact, c)
			return nil
		})
		return err
	})
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, err
	}
	return rows, compact, nil
}

// withCompactTombstones adds to rows (the event's effects rows, by version) each compact
// tombstone whose version has no effects row, as the expired row it was, and keeps them by
// version. A row written since (a reopened or reconciled event) takes the version's place.
func withCompactTombstones(rows []EffectRow, consumer, eventID string, compact []compactTombstone) []EffectRow {
	if len(compact) == 0 {
		return rows
	}
	for _, c := range compact {
		if slices.ContainsFunc(rows, func(r EffectRow) bool { return r.EffectVersion == c.effectVersion }) {
			continue
		}
		evidence := c.evidenceUntil
		r := EffectRow{Consumer: consumer, EventID: eventID, EffectVersion: c.effectVersion, State: EffectExpired,
			RequestHash: fingerprint.NoneHash, RequestHashAlg: fingerprint.AlgorithmNone, ExternalRefs: json.RawMessage(`[]`),
			EvidenceUntil: &evidence, WriteForbidden: c.flags&compactFlagWriteForbidden != 0, CreatedAt: evidence, UpdatedAt: evidence}
		if c.flags&compactFlagBusiness != 0 {
			r.OutcomeKind = "business"
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b EffectRow) int { return a.EffectVersion - b.EffectVersion })
	return rows
}

// planLedgerRows selects what plan reads of an event's ledger rows (the event named by the SQL
// expressions consumer and eventID), its compact tombstones rendered as expired rows among them.
// The effects rows are compared under the column's own collation, so the primary key serves the
// probe whatever the collation of eventID.
func planLedgerRows(consumer, eventID string) string {
	return fmt.Sprintf(`(
select effect_version, state, write_forbidden, lease_expires_at, request_hash, request_hash_alg, effect_count,
       job_id, outcome_kind, external_refs
  from effects
 where consumer = %[1]s and event_id = %[2]s collate "default"
union all
select distinct on (t.effect_version) t.effect_version, 'expired', t.flags & %[3]d <> 0, null::timestamptz, 'none', 'none', 0,
       null::text, case when t.flags & %[4]d <> 0 then 'business' end, '[]'::jsonb
  from effect_tombstones t
 where t.key = effect_tombstone_key(%[1]s, %[2]s)
   and not exists (select 1 from effects x
                    where x.consumer = %[1]s and x.event_id = %[2]s collate "default" and x.effect_version = t.effect_version))`,
		consumer, eventID, compactFlagWriteForbidden, compactFlagBusiness)
}

// apiKeyTombstoneKey is SQL's api_key_tombstone_key(scopeHash, keyHash) (migration 0038), computed
// as tombstoneKey is, so the middleware's claim takes it as a parameter.
func apiKeyTombstoneKey(scopeHash, keyHash string) int64 {
	return tombstoneKey(scopeHash, keyHash)
}
