-- The API's daily counts leave by partition (issue 40). api_key_daily holds one row per route,
-- client and day, written by every API instance's middleware; `replayctl keys prune
-- --counts-retention` deleted the days past it row by row (dead tuples, index bloat, no disk
-- back). It becomes range-partitioned by day in weekly partitions (Monday, UTC), as effect_bodies
-- is, and prune drops a week whose days have all passed: constant time, its disk returned.
--
-- The primary key (route, day, client_hash) already holds the partition key, so the middleware's
-- upsert (on conflict (route, day, client_hash)) is unchanged and a row is found in one partition.
--
-- No copy and no downtime: the existing table becomes the first partition, api_key_daily_before,
-- holding every day up to this week's end (attached after a CHECK constraint proves its rows fit,
-- so the attach itself does not scan); new weeks get partitions of their own. The grants the
-- table had (a least-privilege deployment's SDK role writes it) are given to the new parent, so
-- running API instances keep writing through the migration. api_key_daily_before leaves when its
-- last day is past the retention, like any week.
alter table api_key_daily rename to api_key_daily_before;
alter index api_key_daily_pkey rename to api_key_daily_before_pkey;

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
) partition by range (day);

do $$
declare
    v_end   date := date_trunc('week', now() at time zone 'UTC')::date + 7;
    v_grant record;
begin
    execute format('alter table api_key_daily_before add constraint api_key_daily_before_days check (day < %L)', v_end);
    execute format('alter table api_key_daily attach partition api_key_daily_before for values from (minvalue) to (%L)', v_end);
    alter table api_key_daily_before drop constraint api_key_daily_before_days;
    for v_grant in
        select grantee, privilege_type from information_schema.role_table_grants
         where table_schema = current_schema() and table_name = 'api_key_daily_before' and grantee <> current_user
    loop
        execute format('grant %s on api_key_daily to %I', v_grant.privilege_type, v_grant.grantee);
    end loop;
end
$$;

-- A day past the partitions made ahead lands here; prune deletes its rows one by one.
create table api_key_daily_default partition of api_key_daily default;

-- Migration 0036's index by day, on every partition: api_key_daily_before's own is attached, not
-- built again. The row deletes of keys prune and the dry run's count read the days due with it.
create index if not exists api_key_daily_by_day on api_key_daily (day);

-- api_key_daily_ensure makes the weekly partitions from p_from's week to p_until that are missing
-- (at most 60 weeks), as effect_bodies_ensure does (security definer: replayctl's operator role may not
-- create tables; a lock it cannot have within 2 s is left to the next prune).
create function api_key_daily_ensure(p_from date, p_until date) returns integer
    language plpgsql security definer set search_path from current set lock_timeout = '2s' as $$
declare
    v_day   date := date_trunc('week', p_from)::date;
    v_last  date := least(p_until, v_day + 7 * 60);
    v_name  text;
    v_made  integer := 0;
begin
    while v_day <= v_last loop
        v_name := 'api_key_daily_w' || to_char(v_day, 'YYYYMMDD');
        if to_regclass(v_name) is null then
            begin
                execute format('create table %I partition of api_key_daily for values from (%L) to (%L)',
                               v_name, v_day, v_day + 7);
                v_made := v_made + 1;
            exception
                -- The week overlaps api_key_daily_before (this week, at migrate) or holds rows of
                -- the default partition: those days stay where they are.
                when check_violation or invalid_object_definition then
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

-- api_key_daily_drop_before drops every partition whose days all lie before p_before (never
-- today's), api_key_daily_before too once the week of the migration does, and returns the rows they held (from the
-- statistics; counting would read what is about to go). The days before p_before in the
-- remaining partitions (the week p_before falls in, the default) are left to the caller's row
-- delete, which reads only those days.
create function api_key_daily_drop_before(p_before date) returns bigint
    language plpgsql security definer set search_path from current set lock_timeout = '2s' as $$
declare
    v_names text[];
    v_name  text;
    v_gone  bigint := 0;
    v_n     bigint;
begin
    -- The partitions due are listed before the first drop: a drop while a cursor still reads the
    -- catalog would leave the bounds of the rows after it unreadable. A partition's days end at
    -- the upper bound of its range (for api_key_daily_before, the end of the week it was made).
    select coalesce(array_agg(c.relname::text order by c.relname), '{}') into v_names
      from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = 'api_key_daily'::regclass
       and (c.relname like 'api\_key\_daily\_w%' or c.relname = 'api_key_daily_before')
       and substring(pg_get_expr(c.relpartbound, c.oid) from 'TO \(''([0-9-]+)''\)')::date
           <= least(p_before, (now() at time zone 'UTC')::date);
    foreach v_name in array v_names loop
        select greatest(reltuples, 0)::bigint into v_n from pg_class where oid = v_name::regclass;
        if v_n = 0 then
            execute format('select count(*) from %I', v_name) into v_n;
        end if;
        begin
            execute format('drop table %I', v_name);
            v_gone := v_gone + v_n;
        exception when lock_not_available then
            exit;
        end;
    end loop;
    return v_gone;
end
$$;

select api_key_daily_ensure((now() at time zone 'UTC')::date, (now() at time zone 'UTC')::date + 40);
