package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// A compact tombstone (migration 0035) is what stays of an expired row after prune's compaction
// age: the hashed key of its event, its version, its consumer's key, its evidence_until and flags.
// The readers that look an event up render it as an expired effects row of that version, with
// the request hash of an imported row without a fingerprint (none): its payload was not kept, so
// every payload matches and the expired evidence goes to the consumer's look-up.
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

// compactTombstoneRows selects, with effectRowColumns' columns, the compact tombstones of the
// event named by the SQL expressions consumer and eventID, whose tombstone key is the SQL
// expression key, and whose version has no effects row: a row written since (a reopened or
// reconciled event) takes the version's place.
func compactTombstoneRows(consumer, eventID, key string) string {
	return fmt.Sprintf(`
select %[1]s, %[2]s, t.effect_version, 'expired', 'none', 'none', '', null::jsonb,
       case when t.flags & %[3]d <> 0 then 'business' else '' end, 0, '[]'::jsonb,
       '', null::timestamptz, false, 0::bigint, null::timestamptz, null::timestamptz, t.evidence_until::timestamptz,
       '', 0, 0, '', t.flags & %[4]d <> 0, t.evidence_until::timestamptz, t.evidence_until::timestamptz
  from effect_tombstones t
 where t.key = %[5]s
   and not exists (select 1 from effects x
                    where x.consumer = %[1]s and x.event_id = %[2]s and x.effect_version = t.effect_version)`,
		consumer, eventID, compactFlagBusiness, compactFlagWriteForbidden, key)
}

// compactTombstoneOfOtherVersion is true when the event (consumer, eventID; its tombstone key key)
// has a compact tombstone under a version other than version that no effects row replaced and a write-forbidden replay did not write:
// for a claim that any settled version refuses, it counts as the expired row it was.
func compactTombstoneOfOtherVersion(consumer, eventID, version, key string) string {
	return fmt.Sprintf(`exists (
    select 1 from effect_tombstones t
     where t.key = %[5]s and t.effect_version <> %[3]s and t.flags & %[4]d = 0
       and not exists (select 1 from effects x
                        where x.consumer = %[1]s and x.event_id = %[2]s and x.effect_version = t.effect_version))`, consumer, eventID, version, compactFlagWriteForbidden, key)
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
select t.effect_version, 'expired', t.flags & %[3]d <> 0, null::timestamptz, 'none', 'none', 0,
       null::text, case when t.flags & %[4]d <> 0 then 'business' end, '[]'::jsonb
  from effect_tombstones t
 where t.key = effect_tombstone_key(%[1]s, %[2]s)
   and not exists (select 1 from effects x
                    where x.consumer = %[1]s and x.event_id = %[2]s collate "default" and x.effect_version = t.effect_version))`,
		consumer, eventID, compactFlagWriteForbidden, compactFlagBusiness)
}
