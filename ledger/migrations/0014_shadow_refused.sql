-- A shadow request NATS refuses to send (its payload and headers exceed the server's
-- max_payload) is that target's failure, "refused", not the run's: before it, one such target
-- stopped every shadow run of its job, so the job could never be executed (issue 16).
alter table job_targets drop constraint if exists job_targets_shadow_status_check;
alter table job_targets add constraint job_targets_shadow_status_check
    check (shadow_status in ('ok', 'error', 'timeout', 'no_responder', 'source_missing', 'refused'));
