-- The idempotency ledger and the replay job records. See docs/ledger.md for the state machine.

create table effects (
    consumer          text        not null,
    event_id          text        not null,
    effect_version    integer     not null check (effect_version >= 0),
    state             text        not null check (state in
                          ('received', 'processing', 'completed', 'uncertain', 'reconciled', 'expired')),
    -- request_hash is "sha256:<hex>" over the canonical payload; request_hash_alg names the
    -- canonicalisation so a later algorithm never compares unlike hashes.
    request_hash      text        not null,
    request_hash_alg  text        not null default 'canonical-json-v1',
    result_hash       text,
    result_body       jsonb,
    -- outcome_kind says whether a stored failure is a terminal business outcome or a transient one.
    outcome_kind      text        check (outcome_kind in ('business', 'transient')),
    effect_count      integer     not null default 0 check (effect_count >= 0),
    external_refs     jsonb       not null default '[]'::jsonb,
    lease_owner       text,
    lease_expires_at  timestamptz,
    heartbeat_at      timestamptz,
    replay_until      timestamptz,
    evidence_until    timestamptz,
    job_id            text,
    attempts          integer     not null default 0,
    last_error        text,
    created_at        timestamptz not null default now(),
    updated_at        timestamptz not null default now(),
    primary key (consumer, event_id, effect_version)
);

-- Plans ask "highest version for this consumer" and "rows needing attention"; both stay index-only.
create index effects_consumer_version_idx on effects (consumer, effect_version);
create index effects_attention_idx on effects (consumer, state) where state in ('processing', 'uncertain');

create table effect_versions (
    consumer        text        not null,
    effect_version  integer     not null check (effect_version >= 0),
    state           text        not null check (state in ('live', 'executing', 'completed', 'cancelled')),
    job_id          text,
    registered_by   text        not null,
    registered_at   timestamptz not null default now(),
    primary key (consumer, effect_version)
);

create table jobs (
    id                       text        primary key,
    consumer                 text        not null,
    status                   text        not null check (status in
                                 ('planned', 'shadowing', 'shadowed', 'executing', 'paused',
                                  'completed', 'cancelled', 'failed')),
    manifest_digest          text        not null,
    effect_version_from      integer     not null,
    effect_version_to        integer     not null,
    write_forbidden          boolean     not null,
    reason                   text        not null,
    ticket                   text,
    stream                   text        not null,
    stream_last_seq          bigint      not null,
    targets                  bigint      not null,
    expected_external_calls  bigint      not null,
    -- ledger_state_digest fingerprints the targets' ledger rows at plan time, to detect a stale plan.
    ledger_state_digest      text        not null,
    created_by               text        not null,
    created_at               timestamptz not null,
    updated_at               timestamptz not null default now(),
    check (effect_version_to > effect_version_from)
);

create index jobs_consumer_status_idx on jobs (consumer, status);

-- job_targets has no foreign key to jobs: plan writes a job and all its targets in one transaction
-- and jobs are never deleted, while a per-row foreign-key check doubled the insert time of a
-- million-target plan.
create table job_targets (
    job_id            text        not null,
    event_id          text        not null,
    stream_seq        bigint      not null,
    original_subject  text        not null,
    failure_reason    text        not null,
    status            text        not null default 'pending' check (status in
                          ('pending', 'shadowed', 'published', 'completed', 'skipped', 'failed', 'uncertain')),
    updated_at        timestamptz not null default now(),
    primary key (job_id, event_id)
);

-- Per-status counts read a job's rows through the primary key's job_id prefix; a second index
-- would slow every plan's bulk insert for no gain.

create table audit (
    id               bigint      generated always as identity primary key,
    at               timestamptz not null default now(),
    actor            text        not null,
    job_id           text,
    manifest_digest  text,
    action           text        not null,
    details          jsonb       not null default '{}'::jsonb
);

create index audit_job_idx on audit (job_id, at);
