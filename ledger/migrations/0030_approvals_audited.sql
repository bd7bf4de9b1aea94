-- Every approval row is backed by an audit entry of its job's hash chain that names it and the
-- hash of its fields (issue 41): an approval inserted or edited by hand in the ledger has no
-- such entry, and execute does not count it. The rows written before this migration get their
-- entry now, appended to the chain by the migration itself.
create function approval_row_hash(id bigint, job_id text, manifest_digest text, verdict_id bigint, actor text,
                                  decision text, note text, at timestamptz, expires_at timestamptz) returns text
    language sql immutable as $$
    select encode(sha256(convert_to(concat_ws(E'\x1f', id::text, job_id, manifest_digest, verdict_id::text, actor,
        decision, note, to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        to_char(expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')), 'UTF8')), 'hex')
$$;

do $$
declare
    r record;
begin
    for r in select * from approvals order by id loop
        perform audit_append(null, 'replayctl migrate', r.job_id, r.manifest_digest, 'job.approval-recorded',
            jsonb_build_object('approvalId', r.id, 'approvalHash',
                approval_row_hash(r.id, r.job_id, r.manifest_digest, r.verdict_id, r.actor, r.decision, r.note, r.at, r.expires_at)), '');
    end loop;
end
$$;
