-- Result bodies leave by partition (issue 40). A completed effect's body moves out of effects into
-- effect_bodies, range-partitioned by week (Monday, UTC) of replay_until: once a week's replay
-- windows have all passed, `replayctl ledger prune` drops that week's partition, a constant-time
-- drop that returns its disk, instead of nulling bodies row by row (dead tuples, index bloat, no
-- disk back). A body outlives its replay window by at most a week; a week, not a day, because
-- every schema made (each test's too) creates the partitions ahead. The row in
-- effects keeps result_hash, so the event still counts as done and shadow compares on the hash.
--
-- No downtime: rows completed before this migration keep their body in effects.result_body and
-- the readers take coalesce(effects.result_body, the partition's); an SDK older than this
-- migration still writes effects.result_body and still works; prune clears those row by row as
-- before. The key includes replay_until, the partition key, which the effects row holds: a read
-- probes one partition.
create table effect_bodies (
    consumer        text        not null,
    event_id        text        not null,
    effect_version  integer     not null,
    replay_until    timestamptz not null,
    body            jsonb       not null,
    primary key (consumer, event_id, effect_version, replay_until)
) partition by range (replay_until);

-- A body dated past the partitions made ahead lands here; prune deletes its rows one by one.
create table effect_bodies_default partition of effect_bodies default;

-- effect_bodies_ensure makes the weekly partitions from this week to p_until that are missing, so
-- the SDK's completions land in a week's own partition. It runs as the schema's owner (security
-- definer: replayctl's operator role may not create tables), from migrate and every prune. A week
-- the default partition already holds rows of is skipped: those rows stay in the default.
--
-- Creating or dropping a partition locks effect_bodies for a moment, and a lock that waits queues
-- every completion of the SDK behind it: both functions wait at most 2 s for their lock (a
-- long transaction on the table), then stop and leave the rest to the next prune.
create function effect_bodies_ensure(p_until timestamptz) returns integer
    language plpgsql security definer set search_path from current set lock_timeout = '2s' as $$
declare
    v_day   date := date_trunc('week', now() at time zone 'UTC')::date;
    v_last  date := least((p_until at time zone 'UTC')::date, v_day + 7 * 60);
    v_name  text;
    v_made  integer := 0;
begin
    while v_day <= v_last loop
        v_name := 'effect_bodies_w' || to_char(v_day, 'YYYYMMDD');
        if to_regclass(v_name) is null then
            begin
                execute format('create table %I partition of effect_bodies for values from (%L) to (%L)',
                               v_name, v_day::timestamp at time zone 'UTC', (v_day + 7)::timestamp at time zone 'UTC');
                v_made := v_made + 1;
            exception
                when check_violation then
                    null;
                when lock_not_available then
                    exit;
            end;
        end if;
        v_day := v_day + 7;
    end loop;
    return v_made;
end
$$;

-- effect_bodies_drop_before drops every weekly partition whose whole week lies before p_before
-- (never after now(): a body inside its replay window is never dropped) and deletes the default
-- partition's rows before it; it returns the bodies removed, estimated from the partitions'
-- statistics (counting them would read what is about to be dropped).
create function effect_bodies_drop_before(p_before timestamptz) returns bigint
    language plpgsql security definer set search_path from current set lock_timeout = '2s' as $$
declare
    v_before timestamptz := least(p_before, now());
    v_part   record;
    v_gone   bigint := 0;
    v_n      bigint;
begin
    for v_part in
        select c.oid, c.relname, greatest(c.reltuples, 0)::bigint as estimate,
               to_date(substr(c.relname, length('effect_bodies_w') + 1), 'YYYYMMDD') as day
          from pg_inherits i join pg_class c on c.oid = i.inhrelid
         where i.inhparent = 'effect_bodies'::regclass and c.relname like 'effect_bodies\_w%'
    loop
        if ((v_part.day + 7)::timestamp at time zone 'UTC') <= v_before then
            if v_part.estimate = 0 then
                execute format('select count(*) from %I', v_part.relname) into v_n;
            else
                v_n := v_part.estimate;
            end if;
            begin
                execute format('drop table %I', v_part.relname);
                v_gone := v_gone + v_n;
            exception when lock_not_available then
                exit;
            end;
        end if;
    end loop;
    delete from effect_bodies_default where replay_until < v_before;
    get diagnostics v_n = row_count;
    return v_gone + v_n;
end
$$;

select effect_bodies_ensure(now() + interval '40 days');
