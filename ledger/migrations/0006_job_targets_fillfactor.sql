-- A target row is updated three or four times in its life (shadowed, published, completed), and
-- none of those updates touches an indexed column. With room left on each page PostgreSQL makes
-- them heap-only (HOT) updates: no new entries in the primary key and the (job_id, stream_seq)
-- index. Marking 2,000 targets published took 20-22 ms instead of 32-53 ms (docs/benchmarks.md);
-- the table is twice the size, and plan's insert of the targets costs the same.
-- Applies to pages written from now on; existing rows keep their pages until rewritten.
alter table job_targets set (fillfactor = 50);
