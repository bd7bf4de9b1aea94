-- What execute records on the job and its targets: the targets' ledger rows at plan time (to
-- report drift per target, not only as one digest), when each target was published and why one
-- was settled without a ledger outcome, and the job's status changes and live run state.
-- See docs/ledger.md.

-- planned_states is the target's ledger rows at plan time rendered "version:state:request_hash,..."
-- by version, exactly as the plan digest rendered them; NULL when it had none. Execute renders the
-- current rows the same way, so an unchanged target compares equal and a drifted one can be shown
-- before and after. Targets planned before this migration have none, so any ledger row of theirs
-- reads as drift: such jobs are re-planned.
-- published_at is the target's first publish, kept when a resumed run publishes it again, so
-- status can tell how long a target has waited for its outcome.
-- outcome_detail says why a target was skipped (drifted since plan) or failed (a missing or
-- changed DLQ message, a business failure's error).
alter table job_targets
    add column planned_states text,
    add column published_at   timestamptz,
    add column outcome_detail text;

-- status_reason, status_by and status_at record who moved a job to its status and why (pause,
-- cancel, a guard stopping the run), so `replayctl status` can say why a job is paused.
-- run_state is the executor's live state (rate, published, throttling) as JSON, written by the
-- process that runs the job and read by `replayctl status` from another process; run_state_at
-- tells a stale state (the executor died) from a live one.
alter table jobs
    add column status_reason text,
    add column status_by     text,
    add column status_at     timestamptz,
    add column run_state     jsonb,
    add column run_state_at  timestamptz;

-- job_id joins the (consumer, effect_version) index, so "is any row under this version not the
-- job's?" is two index probes (the ends of the version's job_id range) instead of reading every row
-- of a million-row replay, or the whole table when the planner expects an early match. The index
-- still serves everything the two-column one did (its prefix). Building it holds writes to effects
-- for as long as the build takes (about 1 s per million rows on the benchmark machine).
create index effects_consumer_version_job_idx on effects (consumer, effect_version, job_id);
drop index effects_consumer_version_idx;
