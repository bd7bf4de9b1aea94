-- An audit log that shows tampering (issue 41): every entry carries the hash of the previous
-- entry of its chain (one chain per consumer: the job's, or details->>'consumer'; '(ledger)' for
-- the rest) and its own hash over its fields and that link, and the database role that wrote it.
-- An entry edited, deleted or inserted by hand breaks a link `replayctl log --verify` and execute
-- find. audit_append is the one way entries are written: it takes the chain's lock, so two writers
-- of one chain never link to the same predecessor.
alter table audit
    add column chain      text,
    add column prev_hash  text,
    add column entry_hash text,
    add column db_role    text;

create index audit_chain_idx on audit (chain, id);

-- audit_entry_hash is the hash an entry must carry: sha256 over the previous entry's hash and
-- the entry's fields, the time in UTC to the microsecond and the details as jsonb renders them.
create function audit_entry_hash(prev text, at timestamptz, actor text, job_id text, manifest_digest text,
                                 action text, details jsonb, chain text, db_role text) returns text
    language sql immutable as $$
    select encode(sha256(convert_to(concat_ws(E'\x1f', coalesce(prev, ''),
        to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), actor, coalesce(job_id, ''),
        coalesce(manifest_digest, ''), action, details::text, chain, coalesce(db_role, '')), 'UTF8')), 'hex')
$$;

create function audit_append(p_at timestamptz, p_actor text, p_job_id text, p_manifest_digest text,
                             p_action text, p_details jsonb, p_consumer text) returns bigint
    language plpgsql as $$
declare
    v_chain text;
    v_prev  text;
    v_at    timestamptz := coalesce(p_at, now());
    v_id    bigint;
begin
    v_chain := coalesce(nullif(p_consumer, ''), p_details->>'consumer',
                        (select consumer from jobs where id = p_job_id), '(ledger)');
    perform pg_advisory_xact_lock(hashtextextended(current_schema() || ':replayctl.audit:' || v_chain, 0));
    select entry_hash into v_prev from audit where chain = v_chain order by id desc limit 1;
    insert into audit (at, actor, job_id, manifest_digest, action, details, chain, prev_hash, entry_hash, db_role)
    values (v_at, p_actor, p_job_id, p_manifest_digest, p_action, coalesce(p_details, '{}'::jsonb), v_chain, v_prev,
            audit_entry_hash(v_prev, v_at, p_actor, p_job_id, p_manifest_digest, p_action, coalesce(p_details, '{}'::jsonb),
                             v_chain, session_user::text),
            session_user::text)
    returning id into v_id;
    return v_id;
end
$$;

-- The entries written before this migration join their chains in id order.
do $$
declare
    r      record;
    v_prev text;
    v_last jsonb := '{}'::jsonb;
begin
    for r in select a.id, a.at, a.actor, a.job_id, a.manifest_digest, a.action, a.details,
                    coalesce(a.details->>'consumer', j.consumer, '(ledger)') as chain
               from audit a left join jobs j on j.id = a.job_id
              order by a.id
    loop
        v_prev := v_last->>r.chain;
        update audit
           set chain = r.chain, prev_hash = v_prev, db_role = null,
               entry_hash = audit_entry_hash(v_prev, r.at, r.actor, r.job_id, r.manifest_digest, r.action, r.details, r.chain, null)
         where id = r.id
        returning entry_hash into v_prev;
        v_last := v_last || jsonb_build_object(r.chain, v_prev);
    end loop;
end
$$;
