-- Approvals bound to a plan's digest (replayctl approve, reject, policy). A consumer's policy says
-- how many actors other than the planner must approve a job before execute runs it; each decision
-- names the manifest digest and the shadow verdict it was given after, so a re-plan or a new
-- verdict voids it, and it expires. Decisions are never updated: a later one by the same actor
-- supersedes the earlier.
create table approval_policies (
    consumer                text             primary key,
    approvals               integer          not null check (approvals between 0 and 10),
    unless_write_forbidden  boolean          not null default false,
    when_calls_over         bigint           check (when_calls_over >= 0),
    valid_for_seconds       double precision not null check (valid_for_seconds > 0),
    set_by                  text             not null,
    set_at                  timestamptz      not null default now()
);

create table approvals (
    id               bigint      generated always as identity primary key,
    job_id           text        not null references jobs (id),
    manifest_digest  text        not null,
    verdict_id       bigint      not null,
    actor            text        not null,
    decision         text        not null check (decision in ('approved', 'rejected')),
    note             text        not null,
    at               timestamptz not null default now(),
    expires_at       timestamptz not null
);

create index approvals_job_idx on approvals (job_id, id);
