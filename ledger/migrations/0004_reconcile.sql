-- What `replayctl reconcile` records on an uncertain effects row: the consumer's look-up verdict,
-- who asked and when. See docs/ledger.md, "How reconcile uses it".

-- A row the look-up proved done becomes reconciled. Every other verdict keeps the row uncertain
-- (manual_review is deliberately not an effects state: the SDK and plan already refuse uncertain
-- rows, and a new state would be one more place a refusal could be forgotten) and marks it with
-- review_state = 'manual_review'. review_verdict is the latest look-up verdict (happened,
-- not_happened, unknown), review_note the look-up's detail. reviewed_at and reviewed_by say who
-- asked and when. Marking a row for review leaves updated_at alone, so a row's age (and
-- --older-than) still counts from when it became uncertain; reconcile's compare-and-set reads both
-- updated_at and reviewed_at, so a row changed by anyone between list and apply is left alone.
alter table effects
    add column review_state   text check (review_state in ('manual_review')),
    add column review_verdict text check (review_verdict in ('happened', 'not_happened', 'unknown')),
    add column review_note    text,
    add column reviewed_at    timestamptz,
    add column reviewed_by    text;

-- Reconcile lists a consumer's uncertain rows in keyset pages by (event_id, effect_version) in byte
-- order. The partial index holds only uncertain rows (few by nature), so it costs the SDK nothing
-- on the rows it completes, and each page is a range scan instead of a sort of every uncertain row.
create index effects_uncertain_idx on effects (consumer, event_id collate "C", effect_version)
    where state = 'uncertain';
