-- The ledger's lifecycle: what `replayctl ledger stats` counts that no effects row keeps, and what
-- `replayctl ledger prune` removes besides effects. See docs/ledger.md, "Lifecycle".

-- effect_incidents records what the consumer SDK saw but effects cannot hold: a message refused
-- because its payload fingerprint differs from the stored one (the row is deliberately left as it
-- was), and a lease found lapsed (taken over, or turned uncertain, which overwrites the lease).
-- dedup_key names the incident itself (the refused message's stream sequence and fingerprint, or
-- the lapsed lease's owner and expiry), so a redelivery or a second instance seeing the same
-- incident records it once. Rows are small and pruned by `replayctl ledger prune` after
-- --incident-retention.
create table effect_incidents (
    id              bigint      generated always as identity primary key,
    at              timestamptz not null default now(),
    consumer        text        not null,
    event_id        text        not null,
    effect_version  integer     not null,
    kind            text        not null check (kind in ('payload_conflict', 'lease_lapsed')),
    dedup_key       text        not null,
    stored_hash     text,
    incoming_hash   text,
    lease_owner     text,
    unique (consumer, kind, event_id, effect_version, dedup_key)
);

-- Stats count one consumer's incidents of one kind in a time window.
create index effect_incidents_consumer_kind_at_idx on effect_incidents (consumer, kind, at);
