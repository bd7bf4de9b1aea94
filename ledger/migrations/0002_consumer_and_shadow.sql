-- The consumer SDK's lease bookkeeping and the shadow pass's stored outcomes and verdicts.
-- See docs/ledger.md.

-- calls_started counts external calls the SDK began under the current lease, recorded before each
-- call is made: a lapsed lease with calls_started = 0 may be taken over safely, one with
-- calls_started > 0 may have produced an effect and becomes uncertain.
alter table effects add column calls_started integer not null default 0 check (calls_started >= 0);

-- payload_hash is the target's request fingerprint at plan time, so shadow and execute can prove
-- they send the very payload that was planned. Rows planned before this migration have none.
alter table job_targets add column payload_hash text;

-- One shadow outcome per target, overwritten by each shadow run of the job.
alter table job_targets
    add column shadow_status text check (shadow_status in
        ('ok', 'error', 'timeout', 'no_responder', 'source_missing')),
    -- shadow_comparison compares the shadow result with the target's original result in the ledger;
    -- shadow_compared_on says whether on the retained result body or, once it was pruned, on the hash.
    add column shadow_comparison   text check (shadow_comparison in ('identical', 'changed', 'no_original')),
    add column shadow_compared_on  text check (shadow_compared_on in ('body', 'hash')),
    add column shadow_result_hash  text,
    add column shadow_effect_count integer check (shadow_effect_count >= 0),
    add column shadow_error        text,
    add column shadowed_at         timestamptz;

-- A verdict binds one shadow run's outcome to the manifest digest it shadowed: execute requires a
-- passing verdict for the digest it is given.
create table shadow_verdicts (
    id               bigint      generated always as identity primary key,
    job_id           text        not null references jobs (id),
    manifest_digest  text        not null,
    verdict          text        not null check (verdict in ('pass', 'fail')),
    sample_seed      text        not null,
    thresholds       jsonb       not null,
    totals           jsonb       not null,
    reasons          jsonb       not null default '[]'::jsonb,
    report_path      text,
    actor            text        not null,
    created_at       timestamptz not null default now()
);

create index shadow_verdicts_job_idx on shadow_verdicts (job_id, id);

-- Shadow and execute walk a job's targets in stream order, merged with a forward read of the DLQ;
-- without this index every page of a million-target job sorted the whole job (0.1-0.2 s a page).
create index job_targets_job_seq_idx on job_targets (job_id, stream_seq);
