-- Expiry is a state, not a deletion. `replayctl ledger prune` turns a row whose evidence_until
-- passed into an `expired` tombstone instead of deleting it, and deletes tombstones only past
-- --tombstone-retention. final_state keeps what the row was when it expired (completed,
-- reconciled, or received for a row imported with dates); the tombstone keeps request_hash,
-- result_hash, outcome_kind, effect_count, external_refs, job_id and the dates, and loses
-- result_body, last_error and review_note. See docs/ledger.md, "Expired evidence".
alter table effects
    add column final_state text check (final_state in ('received', 'completed', 'reconciled')),
    add constraint effects_expired_final_state check (state <> 'expired' or final_state is not null);
