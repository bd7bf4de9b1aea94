-- Compact tombstones (issue 40). A tombstone kept in effects costs a whole row (about 380 bytes
-- with its indexes) for five years. Once a tombstone is older than prune's compaction age,
-- `replayctl ledger prune` moves it here, deleting its effects row in the same statement: what
-- dedup needs stays (that the event's effect under this version is settled, how, and until when
-- the tombstone is kept), in about 95 bytes with its indexes. Readers that look an event up (the
-- SDK's reads, plan) see a compact tombstone as an `expired` row of the event, unless
-- effects holds a row of that version (written since: a reopened or reconciled event).
--
-- Not kept: the request hash (a later copy's payload cannot be compared, so it goes to the
-- consumer's look-up, as any expired evidence does), the external refs, the job, the body and
-- every text. The event ID is kept only as a hash: the key is the first 8 bytes of
-- sha256(consumer, 0x1f, event ID), so a look-up by event is one probe of a hash index and the
-- table holds no identifier of the payload. Eight bytes, not sixteen: a row then fits 48 bytes
-- of heap instead of 56. Two events sharing a key (about one chance in twenty across a billion
-- new events meeting a billion tombstones) make the newer one meet expired evidence: its
-- look-up is asked, and no effect is made or skipped on that word.
create function effect_tombstone_key(p_consumer text, p_event_id text) returns bigint
    language sql immutable strict parallel safe
    return ('x' || encode(substring(sha256(convert_to(p_consumer || chr(31) || p_event_id, 'UTF8')) for 8), 'hex'))::bit(64)::bigint;

-- consumer_key names the consumer for prune (a consumer's tombstones leave at its own retention)
-- without repeating its name in every row. A registered number, not a hash of the name: two
-- consumers sharing a hash would have one's prune delete the other's tombstones at the wrong
-- retention.
create table effect_tombstone_consumers (
    id        integer generated always as identity primary key,
    consumer  text    not null unique
);

create table effect_tombstones (
    key             bigint   not null,
    effect_version  integer  not null,
    consumer_key    integer  not null,
    -- The day after evidence_until (UTC): deleted at the consumer's retention never early, at most
    -- a day late.
    evidence_until  date     not null,
    -- final_state: 1 completed, 2 reconciled; 4 a write-forbidden replay's row; 8 a business failure
    flags           smallint not null
);

-- A hash index: an entry is a 4-byte hash code and the row pointer, and the only question asked
-- is equality. Not unique (a hash index cannot be, and need not be): prune, the only writer,
-- moves every tombstone it deletes from effects, so a key and version may appear twice (moved,
-- reopened, expired and moved again; or two events colliding on 8 bytes), and the readers take
-- each version once.
create index effect_tombstones_key_idx on effect_tombstones using hash (key);

-- Prune deletes a consumer's tombstones by evidence_until. A B-tree, not BRIN: the space of deleted
-- rows is reused by new ones, so a block range would soon hold every date. Many rows share a
-- consumer and a day, which B-tree deduplication stores at a few bytes a row.
create index effect_tombstones_due_idx on effect_tombstones (consumer_key, evidence_until);
