-- :rows completed events in each layout, a quarter on each of the last four days (run.sh).
set search_path = layout_proto;
insert into effects (consumer, event_id, effect_version, state, request_hash, result_hash, effect_count, external_refs,
                     replay_until, evidence_until, created_at, updated_at)
select 'billing', 'f-' || i, 1, 'completed', 'sha256:6f1ed002ab5595859014ebf0951522d9', 'sha256:9f86d081884c7d659a2feaa0c55ad015', 1, '["ch_1"]',
       current_date - (i % 4) + 7, current_date - (i % 4) - 1, current_date - (i % 4), current_date - (i % 4)
  from generate_series(1, :rows) i;
insert into effect_keys (consumer_key, event_key, effect_version, day, flags, result_hash)
select 1, substr(sha256(convert_to('f-' || i, 'UTF8')), 1, 16), 1, current_date - (i % 4), 3, '\x9f86d081884c7d659a2feaa0c55ad015'
  from generate_series(1, :rows) i;
insert into effect_rows (consumer, event_id, effect_version, state, request_hash, result_hash, effect_count, external_refs,
                         replay_until, evidence_until, created_at, updated_at, day)
select 'billing', 'f-' || i, 1, 'completed', 'sha256:6f1ed002ab5595859014ebf0951522d9', 'sha256:9f86d081884c7d659a2feaa0c55ad015', 1, '["ch_1"]',
       current_date - (i % 4) + 7, current_date - (i % 4) - 1, current_date - (i % 4), current_date - (i % 4), current_date - (i % 4)
  from generate_series(1, :rows) i;
vacuum analyze effects, effect_keys, effect_rows;
insert into effect_keys_once (consumer_key, event_key, effect_version, day, flags)
select 1, md5('f-' || i)::uuid, 1, current_date - (i % 4), 0
  from generate_series(1, :rows) i;
vacuum analyze effect_keys_once;
-- A day also holds rows that never settled: about a thousandth of the rows, uncertain, on each day.
update effect_rows set state = 'uncertain', evidence_until = null where substr(event_id, 3)::bigint % 997 = 0;
insert into effect_keys_v (event_key, consumer_key, effect_version, day, flags)
select md5('1/f-' || i || '/1')::uuid, 1, 1, current_date - (i % 4), 0
  from generate_series(1, :rows) i;
vacuum analyze effect_keys_v;
