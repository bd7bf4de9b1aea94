-- consumer_history: how far back a consumer's ledger reaches (issue 40). A team adopting replayctl
-- already has history in another store; until it is imported, an event handled before adoption
-- has no row and a replay plans it as a target. `replayctl ledger import` moves imported_from back
-- to the oldest imported processing date; plan compares the DLQ's oldest message with the
-- consumer's history start (this, or the SDK's first fingerprint registration) and warns.
create table consumer_history (
    consumer        text        primary key,
    imported_from   timestamptz not null,
    imported_rows   bigint      not null default 0 check (imported_rows >= 0),
    last_import_at  timestamptz not null default now(),
    last_import_by  text        not null
);
