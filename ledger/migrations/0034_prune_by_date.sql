-- Prune finds its work by date (issue 40). Before this, every prune step walked the consumer's
-- whole primary key and tested each row's dates: its cost followed the ledger's size (2.3 s for a
-- dry run at 10 M rows, whatever was due). Each step now reads a partial index that holds only the
-- rows it can act on, in date order, from the oldest up to its horizon: the cost follows the rows
-- due. A row enters the first index when it settles (its evidence_until is set) and leaves it when
-- prune turns it into a tombstone, which enters the second; the third holds only rows written
-- before migration 0033 moved result bodies out of effects, and empties as they age out.
--
-- On a large ledger, create the three indexes first with CREATE INDEX CONCURRENTLY under the same
-- names (docs/operations.md, "Upgrading a large ledger"): this migration then finds them and
-- takes no lock that would stop the running consumers.
create index if not exists effects_evidence_due_idx on effects (consumer, evidence_until)
    where evidence_until is not null and state in ('received', 'completed', 'reconciled');

create index if not exists effects_tombstone_due_idx on effects (consumer, evidence_until)
    where state = 'expired';

create index if not exists effects_legacy_body_due_idx on effects (consumer, replay_until)
    where result_body is not null;

-- How long past its evidence window a consumer's tombstone is kept: how long a copy of one of its
-- events can still arrive (a stream's max age, a restored backup, a partner's resend). The SDK
-- registers it (consumer.Config.TombstoneRetention); NULL for routes and for consumers whose SDK
-- predates it, which prune keeps for its default of five years.
alter table retention_policies add column tombstone_window_seconds bigint check (tombstone_window_seconds > 0);
