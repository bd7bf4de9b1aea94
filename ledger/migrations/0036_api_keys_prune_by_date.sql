-- `replayctl keys prune` finds its work by date (issue 40), as `ledger prune` does since 0034.
-- Its body step had no index on replay_until and scanned api_keys on every batch; its tombstone
-- step walked every tombstone younger than the retention on the one evidence_until index. Each
-- step now reads a partial index of the records it can act on; the old index served only prune.
-- On a large ledger, create these first with CREATE INDEX CONCURRENTLY (docs/operations.md).
create index if not exists api_keys_replay_due_idx on api_keys (replay_until)
    where response_sealed is not null and state in ('completed', 'reconciled');

create index if not exists api_keys_evidence_due_idx on api_keys (evidence_until)
    where state in ('completed', 'reconciled');

create index if not exists api_keys_tombstone_due_idx on api_keys (evidence_until)
    where state = 'expired';

drop index if exists api_keys_evidence_idx;

-- Every route's daily counts are pruned by day; the primary key leads with the route.
create index if not exists api_key_daily_day_idx on api_key_daily (day);
