-- An effects row is written four or more times within a second of its claim (claimed, a mark
-- before each external call, completed). Packed pages left no room for the new versions: every
-- mark went to another page, with a row-lock record, a full new tuple and an entry in each
-- index, about 2.5-3 KB of WAL per event, and WAL was what the consumer waited on. With room on
-- the page the marks are heap-only (HOT) updates: 10-15 % of updates were HOT before, 40 % after,
-- and WAL per event fell by 15-25 % (docs/benchmarks.md, "Where the consumer's time went").
-- A completion changes state, which two partial indexes read, so it is never HOT.
-- Applies to pages written from now on; it takes no lock that blocks reads or writes.
alter table effects set (fillfactor = 70);
