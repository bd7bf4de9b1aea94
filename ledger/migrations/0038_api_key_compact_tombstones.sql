-- Compact API tombstones (issue 40). An API record whose evidence window ended stays as an
-- `expired` row of api_keys, about 500 bytes with its primary key (three 64-character hex hashes,
-- the route, the request hash), for its route's tombstone retention. Once `replayctl keys prune
-- --compact-after` asks, its compact form is written here and the whole row leaves later: what
-- the middleware needs of a key whose evidence expired is only that the key was used, so a
-- request with it goes to the route's look-up (or runs as new, on a route that declared so)
-- instead of running as a first request.
--
-- The key is the first 8 bytes of sha256(scope_hash, 0x1f, key_hash), so a request's look-up is
-- one probe of a hash index and the table holds nothing that names a caller. Two records sharing
-- a key (about one chance in twenty across a billion new keys meeting a billion tombstones) make
-- the newer one meet expired evidence: its route's look-up is asked, and nothing runs twice on
-- that word.
create function api_key_tombstone_key(p_scope_hash text, p_key_hash text) returns bigint
    language sql immutable strict parallel safe
    return ('x' || encode(substring(sha256(convert_to(p_scope_hash || chr(31) || p_key_hash, 'UTF8')) for 8), 'hex'))::bit(64)::bigint;

-- route_key names the route for prune (a route's tombstones leave at its own retention) without
-- repeating its name in every row; a registered number, not a hash, as for the consumers.
create table api_key_tombstone_routes (
    id     integer generated always as identity primary key,
    route  text    not null unique
);

create table api_key_tombstones (
    key             bigint   not null,
    route_key       integer  not null,
    -- The day after evidence_until (UTC): deleted at the route's retention never early, at most a
    -- day late.
    evidence_until  date     not null,
    -- 1 completed, 2 reconciled as happened, 4 reconciled as not happened
    flags           smallint not null
);

-- As effect_tombstones (migration 0035): equality is the only question, a hash index answers it
-- with 4-byte codes, and it need not be unique (a key may be compacted, used again as new, and
-- compacted again).
create index api_key_tombstones_key_idx on api_key_tombstones using hash (key);
create index api_key_tombstones_due_idx on api_key_tombstones (route_key, evidence_until);

-- Each compaction step reads a partial index of the records it can act on (as migration 0036's
-- steps do): whole tombstones not compacted yet by evidence_until, compacted ones by the time of
-- their mark. A marked row leaves the first, a deleted one the second, so batches need no cursor
-- and never reread the rows an earlier batch handled (without them, each batch of a backlog
-- walked past every row marked before it: 883,332 rows took 3 min 20 s). Both hold only the rows
-- between two steps: the compaction age's tombstones and an hour's marks. On a large ledger,
-- create them first with CREATE INDEX CONCURRENTLY (docs/operations.md).
create index if not exists api_keys_compact_due_idx on api_keys (evidence_until)
    where state = 'expired' and note is null;
create index if not exists api_keys_compacted_idx on api_keys (updated_at)
    where state = 'expired' and note = 'compact tombstone written';

-- The middleware's claim asks this before it inserts a record (apiKeysClaim): may a key be
-- inserted as a first request? Not when only a compact tombstone of it is left; yes when there
-- is none, or when a live record of it exists (one written since its compaction, which the
-- claim's conflict arm judges). In a function so its two probes are planned once per session:
-- written into the claim, they were planned on every execution (the SDK's sessions plan each
-- statement, for plans that follow the table as it grows) and cost the middleware about a tenth
-- of its requests a second (docs/benchmarks.md).
create function api_key_insertable(p_key bigint, p_scope_hash text, p_key_hash text) returns boolean
    language plpgsql stable parallel safe
    set plan_cache_mode = auto
as $$
begin
    return not exists (select 1 from api_key_tombstones t where t.key = p_key)
        or exists (select 1 from api_keys w where w.scope_hash = p_scope_hash and w.key_hash = p_key_hash and w.state <> 'expired');
end
$$;
