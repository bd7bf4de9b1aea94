// The compact tombstone key (docs/protocol.md, "Look-up request and reply"; migration 0035): the
// first 8 bytes of SHA-256 over consumer, the byte 0x1f and the event ID, read as a big-endian
// signed 64-bit integer. A consumer sends it as a parameter to find an event's compact tombstones
// (effect_tombstones.key); SQL's effect_tombstone_key(consumer, event_id) gives the same, and
// ledger/testdata/tombstone-keys.json holds the vectors.

import { createHash } from "node:crypto";

/** The compact tombstone key of (consumer, eventId), as PostgreSQL's bigint. */
export function tombstoneKey(consumer: string, eventId: string): bigint {
  const sum = createHash("sha256")
    .update(Buffer.from(consumer, "utf8"))
    .update(Buffer.from([0x1f]))
    .update(Buffer.from(eventId, "utf8"))
    .digest();
  return sum.readBigInt64BE(0);
}
