-- The HTTP half of the design: API idempotency records, their own table (an API key and an
-- event's dedup key are different intents), the retention policies services register, and the
-- middleware's daily counts. No raw key, no payload field and no plaintext body is stored:
-- scope and key are hashes, the response is AES-256-GCM sealed (docs/api.md).
create table api_keys (
    scope_hash        text        not null,
    key_hash          text        not null,
    route             text        not null,
    client_hash       text        not null,
    request_hash      text        not null,
    request_hash_alg  text        not null,
    state             text        not null check (state in
                          ('received', 'processing', 'completed', 'uncertain', 'expired', 'reconciled')),
    resolution        text        check (resolution in ('happened', 'not-happened')),
    response_status   integer,
    response_key_id   text,
    response_sealed   bytea,
    external_ref      text,
    lease_owner       text,
    lease_expires_at  timestamptz,
    heartbeat_at      timestamptz,
    calls_started     integer     not null default 0,
    attempts          integer     not null default 1,
    replay_until      timestamptz,
    evidence_until    timestamptz,
    note              text,
    created_at        timestamptz not null default now(),
    updated_at        timestamptz not null default now(),
    -- The key first: keys show finds a key under every scope by this index's prefix, so the
    -- table needs no second index on key_hash (one less to maintain on every write).
    primary key (key_hash, scope_hash)
) with (fillfactor = 70);

-- The worker and stats read rows needing attention; prune walks evidence_until.
create index api_keys_attention_idx on api_keys (route, state) where state in ('processing', 'uncertain');
create index api_keys_evidence_idx on api_keys (evidence_until) where evidence_until is not null;

create table retention_policies (
    kind                    text        not null check (kind in ('route', 'consumer')),
    name                    text        not null,
    delays                  jsonb       not null,
    replay_window_seconds   bigint      not null check (replay_window_seconds > 0),
    evidence_window_seconds bigint      not null check (evidence_window_seconds >= replay_window_seconds),
    irreversible            boolean     not null default false,
    expired_is_new          boolean     not null default false,
    registered_by           text        not null,
    registered_at           timestamptz not null default now(),
    primary key (kind, name)
);

create table api_key_daily (
    route        text   not null,
    client_hash  text   not null,
    day          date   not null,
    requests     bigint not null default 0,
    replays      bigint not null default 0,
    in_progress  bigint not null default 0,
    mismatches   bigint not null default 0,
    uncertain    bigint not null default 0,
    primary key (route, day, client_hash)
);
