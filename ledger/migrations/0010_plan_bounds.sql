-- Job boundaries (issue 14): what a write-forbidden replay settled, which kind of source a job was
-- planned from, and every stream sequence of a target's messages, for drain. See docs/ledger.md.

-- A write-forbidden replay records the recomputed result and the suppressed calls, but made no
-- external call: its completed row must never make a later live copy, a later real replay's plan,
-- the call estimate or the drift check treat the event as done. The SDK sets it when it completes
-- a Replay-Write-Forbidden: true delivery.
alter table effects add column write_forbidden boolean not null default false;

-- dlq: dead-lettered messages, targets are events with no completed row under any version;
-- backfill: a retained source stream, targets are events completed under an older version. Drain
-- deletes messages from dlq sources only: a backfill's source stream is the system of record.
alter table jobs add column source_kind text not null default 'dlq' check (source_kind in ('dlq', 'backfill'));

-- source_seqs lists every stream sequence of the target's messages in the scan when there were
-- several (a DLQ that received the same event twice); NULL when stream_seq is the only one.
alter table job_targets add column source_seqs bigint[];
