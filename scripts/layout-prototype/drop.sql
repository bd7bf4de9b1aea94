-- The day's drop when the key rows' flags are written then (keys-flags-at-drop.pgbench): one
-- set-based update from the day's partition, then the drop. :day is YYYYMMDD.
set search_path = layout_proto;
\timing on
update effect_keys k
   set flags = 1 | case when r.effect_count > 0 then 2 else 0 end,
       result_hash = decode(substr(r.result_hash, 8, 32), 'hex')
  from effect_rows_d:day r
 where r.state in ('completed', 'reconciled')
   and k.consumer_key = 1 and k.event_key = substr(sha256(convert_to(r.event_id, 'UTF8')), 1, 16)
   and k.effect_version = r.effect_version;
drop table effect_rows_d:day;
