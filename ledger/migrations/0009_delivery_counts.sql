-- What the consumer SDK counts that no effects row keeps: every delivery it handled, and those
-- answered from the ledger without running the handler (duplicates: a redelivery after a lost
-- ack, a producer's retry, a replay of a completed event). The replay rate `replayctl ledger
-- stats` reports is duplicates over deliveries; the SDK's Prometheus counters
-- (idempotency_deliveries_total, idempotency_duplicate_deliveries_total) are the same counts,
-- live. See docs/ledger.md, "Stats".
--
-- One row per consumer and UTC day. Each SDK instance adds what it counted since its last flush
-- every few seconds (`on conflict ... do update set n = n + excluded.n`), so the table grows by
-- one small row per consumer a day, whatever the traffic, and instances sum without coordinating.
-- Payload conflicts and lapsed leases stay in effect_incidents, one row each (migration 0005).
create table delivery_counts (
    consumer             text        not null,
    day                  date        not null,
    deliveries           bigint      not null default 0 check (deliveries >= 0),
    duplicate_deliveries bigint      not null default 0 check (duplicate_deliveries >= 0),
    updated_at           timestamptz not null default now(),
    primary key (consumer, day)
);
