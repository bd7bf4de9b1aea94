-- Fills schema scale10m (migrated first) with 7 M completed rows of consumer billing whose evidence
-- ends over the next 70 days and 3 M tombstones from the last three years: the prune measurements
-- of docs/benchmarks.md ("Prune of rows by date"). psql test -f scripts/fill-ledger-10m.sql
set search_path = scale10m;
-- 7 M completed rows whose evidence ends over the next 70 days, 100,000 of them within the last day (due now)
insert into effects (consumer, event_id, effect_version, state, request_hash, request_hash_alg, result_hash, effect_count,
                     replay_until, evidence_until, created_at, updated_at, completed_by)
select 'billing', 'ev-' || lpad(i::text, 9, '0'), 1, 'completed', 'sha256:' || md5(i::text), 'canonical-json-v1', md5(i::text), 1,
       now() - interval '1 day' + ((i % 71) * interval '1 day') - interval '20 days',
       now() - interval '1 day' + ((i % 71) * interval '1 day') + (i % 1000) * interval '1 second',
       now() - interval '30 days', now() - interval '30 days', 'fill'
  from generate_series(1, 7000000) i;
-- 3 M tombstones whose evidence ended over the last three years
insert into effects (consumer, event_id, effect_version, state, final_state, request_hash, request_hash_alg, result_hash, effect_count,
                     replay_until, evidence_until, created_at, updated_at)
select 'billing', 'old-' || lpad(i::text, 9, '0'), 1, 'expired', 'completed', 'sha256:' || md5(i::text), 'canonical-json-v1', md5(i::text), 1,
       now() - interval '3 years', now() - interval '2 days' - (i % 1000) * interval '1 day', now() - interval '4 years', now() - interval '4 years'
  from generate_series(1, 3000000) i;
vacuum analyze effects;
