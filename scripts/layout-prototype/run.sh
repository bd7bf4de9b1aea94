#!/usr/bin/env bash
# Measures the partitioned layout of docs/decisions.md against today's effects table, side by side
# in one sitting: the SDK's read and three writes per event (pgbench, 8 clients, custom plans as
# the SDK's sessions make them), at an empty ledger and at ROWS completed events; then a day of
# expired rows leaving each layout (a partition dropped; the same rows deleted; the key rows' flags
# written from the day's partition and then the drop, for keys-flags-at-drop); then bytes per row.
# The bench truncates between sizes and fills again for the drop, so every point starts alike.
# keys-once writes the key row once, at the claim, and names the day's partition in every write;
# its day leaves by drop-once.sql (the unsettled rows moved first).
#   scripts/layout-prototype/run.sh            # ROWS=2000000 SMALL_ROWS=100000 SECONDS_EACH=20
#   VARIANTS="today keys-once" scripts/layout-prototype/run.sh
set -euo pipefail
cd "$(dirname "$0")"
db="${DATABASE_URL:-postgres:///test?host=/var/run/postgresql}"
rows="${ROWS:-2000000}"
small="${SMALL_ROWS:-100000}"
secs="${SECONDS_EACH:-20}"
pgbench=$(ls /usr/lib/postgresql/*/bin/pgbench | tail -1)
export PGOPTIONS="-c search_path=layout_proto -c plan_cache_mode=force_custom_plan -c jit=off"
# The SDK knows the day of an event's row (its read and claim return it) and sends it as a value:
# a day given as current_date is planned against every partition (2.9 ms against 0.08 here).
day_today=$(psql -qtA "$db" -c "select current_date")
day_name=$(psql -qtA "$db" -c "select to_char(current_date, 'YYYYMMDD')")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
variants="${VARIANTS:-today keys keys-flags-at-drop keys-once}"
for f in $variants; do sed -e "s/'DAY'/'$day_today'/g" -e "s/DAYNAME/$day_name/g" "$f.pgbench" >"$work/$f.pgbench"; done
bench() { # layout label
  # pgbench exits non-zero when a client aborts; its figures and the failures are still printed.
  { "$pgbench" -n -c 8 -j 2 -T "$secs" -M extended -f "$work/$1.pgbench" "$db" 2>&1 || true; } |
    awk -v l="$1" -v at="$2" '/^tps/ {tps=$3} /latency average/ {lat=$4} /aborted|ERROR/ {err=err " " $0}
      END {printf "%-19s %-8s %8.0f events/s  %6.2f ms%s\n", l, at, tps, lat, substr(err, 1, 200)}'
}
psql -q "$db" -f setup.sql 2>&1 | grep -v NOTICE || true
# This machine's PostgreSQL runs without autovacuum: a table the bench grows from empty is never
# analyzed and is read by sequential scans, so the small point is filled and analyzed too.
for size in "$small" "$rows"; do
  psql -q "$db" -v rows="$size" -f fill.sql
  psql -q "$db" -c "vacuum analyze layout_proto.effects, layout_proto.effect_keys, layout_proto.effect_rows"
  for round in 1 2; do for v in $variants; do bench "$v" "$size"; done; done
  psql -q "$db" -c "truncate layout_proto.effects, layout_proto.effect_keys, layout_proto.effect_keys_once, layout_proto.effect_keys_v, layout_proto.effect_rows"
done
psql -q "$db" -v rows="$rows" -f fill.sql
psql -q "$db" -c "vacuum analyze layout_proto.effects, layout_proto.effect_keys, layout_proto.effect_rows"
day=$(psql -qtA "$db" -c "select to_char(current_date - 3, 'YYYYMMDD')")
n=$(psql -qtA "$db" -c "select count(*) from layout_proto.effect_rows_d$day")
psql -qtA "$db" -c "select pg_size_pretty(pg_total_relation_size('layout_proto.effect_rows_d$day'))" | sed "s/^/day partition before the drop: /"
psql -q "$db" -c '\timing on' -c "drop table layout_proto.effect_rows_d$day" | sed "s/^/drop of the day ($n rows): /"
psql -q "$db" -c '\timing on' -c "delete from layout_proto.effects where consumer = 'billing' and state = 'completed' and evidence_until < current_date - 3" | sed "s/^/delete of the same day from effects: /"
day2=$(psql -qtA "$db" -c "select to_char(current_date - 2, 'YYYYMMDD')")
n2=$(psql -qtA "$db" -c "select count(*) from layout_proto.effect_rows_d$day2")
psql -q "$db" -v day="$day2" -f drop.sql | sed "s/^/flags written, then the drop ($n2 rows): /"
day1=$(psql -qtA "$db" -c "select to_char(current_date - 1, 'YYYYMMDD')")
n1=$(psql -qtA "$db" -c "select count(*) from layout_proto.effect_rows_d$day1")
u1=$(psql -qtA "$db" -c "select count(*) from layout_proto.effect_rows_d$day1 where state not in ('completed', 'reconciled')")
psql -q "$db" -v day="$day1" -f drop-once.sql | sed "s/^/key rows left as they are, $u1 unsettled rows moved, then the drop ($n1 rows): /"
psql -qtA "$db" -c "select 'bytes a row: effects ' || round(pg_total_relation_size('layout_proto.effects')::numeric / greatest(count(*), 1), 1) from layout_proto.effects"
psql -qtA "$db" -c "select 'bytes a row: effect_keys ' || round(pg_total_relation_size('layout_proto.effect_keys')::numeric / count(*), 1) from layout_proto.effect_keys"
psql -qtA "$db" -c "select 'bytes a row: effect_keys_once ' || round(pg_total_relation_size('layout_proto.effect_keys_once')::numeric / count(*), 1) from layout_proto.effect_keys_once"
psql -qtA "$db" -c "select 'bytes a row: effect_keys_v ' || round(pg_total_relation_size('layout_proto.effect_keys_v')::numeric / count(*), 1) from layout_proto.effect_keys_v"
psql -qtA "$db" -c "select 'bytes a row: effect_rows ' || round((select sum(pg_total_relation_size(inhrelid)) from pg_inherits where inhparent = 'layout_proto.effect_rows'::regclass)::numeric / count(*), 1) from layout_proto.effect_rows"
