-- The partitioned layout of docs/decisions.md ("The layout for bounded storage"), built beside
-- today's effects table so both take the same writes: effect_keys is the unpartitioned key table
-- (and the tombstone), effect_rows the full rows by day of creation. Run by run.sh.
drop schema if exists layout_proto cascade;
create schema layout_proto;
set search_path = layout_proto;

-- Today's table: the effects columns the SDK writes and every index migration 0038 leaves on it.
create table effects (
    consumer text not null, event_id text not null, effect_version integer not null,
    state text not null, request_hash text not null, request_hash_alg text not null default 'canonical-json-v1',
    result_hash text, outcome_kind text, effect_count integer not null default 0,
    external_refs jsonb not null default '[]', lease_owner text, lease_expires_at timestamptz,
    heartbeat_at timestamptz, replay_until timestamptz, evidence_until timestamptz, job_id text,
    attempts integer not null default 0, last_error text, calls_started integer not null default 0,
    created_at timestamptz not null default now(), updated_at timestamptz not null default now(),
    primary key (consumer, event_id, effect_version)
) with (fillfactor = 70);
create index on effects (consumer, state) where state in ('processing', 'uncertain');
create index on effects (consumer, effect_version, job_id);
create index on effects (consumer, event_id collate "C", effect_version) where state = 'uncertain';
create index on effects (consumer, evidence_until) where evidence_until is not null and state in ('received', 'completed', 'reconciled');
create index on effects (consumer, evidence_until) where state = 'expired';

-- The key table: what dedup needs for the whole evidence window and after it. flags: 1 settled,
-- 2 an effect happened. day names the partition of the full row.
create table effect_keys (
    consumer_key  integer  not null,
    event_key     bytea    not null,
    effect_version integer not null,
    day           date     not null,
    flags         smallint not null default 0,
    result_hash   bytea,
    primary key (consumer_key, event_key, effect_version)
) with (fillfactor = 90);

-- The full rows by day; the prune indexes are gone (a day leaves whole).
create table effect_rows (like effects including defaults, day date not null,
    primary key (consumer, event_id, effect_version, day)) partition by range (day);
create index on effect_rows (consumer, state) where state in ('processing', 'uncertain');
create index on effect_rows (consumer, effect_version, job_id);
create index on effect_rows (consumer, event_id collate "C", effect_version) where state = 'uncertain';
do $$
declare d date;
begin
  for d in select generate_series(current_date - 3, current_date + 3, interval '1 day')::date loop
    execute format('create table %I partition of effect_rows for values from (%L) to (%L) with (fillfactor = 70)',
                   'effect_rows_d' || to_char(d, 'YYYYMMDD'), d, d + 1);
  end loop;
end $$;

-- The key row written once (keys-once.pgbench): 16 bytes of the event's hash as a uuid (fixed
-- length, no varlena header), no result hash, flags only what the claim knows. Nothing updates
-- it at completion; the day's drop deletes the few key rows whose row never settled.
create table effect_keys_once (
    consumer_key   integer  not null,
    event_key      uuid     not null,
    effect_version integer  not null,
    day            date     not null,
    flags          smallint not null default 0,
    primary key (consumer_key, event_key, effect_version)
);
-- Where the rows of a dropped day that never settled are kept (drop-once.sql): few, read by key.
create table effect_rows_held partition of effect_rows for values from (minvalue) to ('2000-01-01');

-- keys-once with one 16-byte key for (consumer, event, version) as the whole primary key
-- (keys-once-v.pgbench): the read probes the versions it can meet (the consumer's registered
-- versions, few) with = any, and the key's B-tree holds 16 bytes an entry.
create table effect_keys_v (
    event_key      uuid     primary key,
    consumer_key   integer  not null,
    effect_version integer  not null,
    day            date     not null,
    flags          smallint not null default 0
);
