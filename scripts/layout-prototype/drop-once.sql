-- The day's drop for keys-once.pgbench: the rows of the day that never settled (a lease still
-- held, uncertain, released) move to effect_rows_held with their key rows repointed, then the
-- partition is dropped; the key rows of its settled rows stay as the tombstones, unchanged. Its
-- cost follows the unsettled rows, not the day. :day is YYYYMMDD.
set search_path = layout_proto;
\timing on
begin;
with moved as (
    delete from effect_rows_d:day where state not in ('completed', 'reconciled') returning *),
kept as (
    insert into effect_rows (consumer, event_id, effect_version, state, request_hash, request_hash_alg, result_hash, outcome_kind, effect_count, external_refs, lease_owner, lease_expires_at, heartbeat_at, replay_until, evidence_until, job_id, attempts, last_error, calls_started, created_at, updated_at, day)
    select consumer, event_id, effect_version, state, request_hash, request_hash_alg, result_hash, outcome_kind, effect_count, external_refs, lease_owner, lease_expires_at, heartbeat_at, replay_until, evidence_until, job_id, attempts, last_error, calls_started, created_at, updated_at, '1970-01-01' from moved returning event_id, effect_version)
update effect_keys_once k set day = '1970-01-01'
  from kept where k.consumer_key = 1 and k.event_key = md5(kept.event_id)::uuid and k.effect_version = kept.effect_version;
drop table effect_rows_d:day;
commit;
