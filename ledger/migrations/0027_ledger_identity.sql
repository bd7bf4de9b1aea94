-- A job remembers which ledger it was planned in: the cluster's system identifier, the database
-- and the schema. A restored copy of the ledger (pg_dump into another cluster or database) carries
-- the job but not the identity, and execute refuses to replay from it: the consumers write their
-- outcomes to the original, so the copy would wait for outcomes that never come. A promoted
-- streaming replica shares the system identifier, and keeps its jobs.
create function replayctl_ledger_identity() returns text
    language sql stable
    as $$ select system_identifier::text || ':' || current_database() || ':' || current_schema() from pg_control_system() $$;

alter table jobs add column ledger_identity text default replayctl_ledger_identity();
