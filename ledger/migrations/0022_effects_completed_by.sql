-- completed_by names the consumer instance (the lease owner) that completed a row, so `replayctl
-- status` can show each instance's share of a job: completing a row clears lease_owner. A
-- trigger sets it rather than the SDK's completion statement, so an SDK older than this migration
-- records it too, and an SDK deployed before the migration runs never meets a missing column.
-- Rows completed before this migration have none.
alter table effects add column completed_by text;

create function effects_set_completed_by() returns trigger language plpgsql as $$
begin
    new.completed_by := old.lease_owner;
    return new;
end
$$;

-- Only the completion of a leased row fires it; every other update of effects skips the call.
create trigger effects_completed_by before update on effects
    for each row when (old.state = 'processing' and new.state = 'completed' and old.lease_owner is not null)
    execute function effects_set_completed_by();
