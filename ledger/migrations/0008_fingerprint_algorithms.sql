-- fingerprint_algorithms: the options of every request-fingerprint algorithm a consumer has
-- written rows with (docs/protocol.md, "Request fingerprint"). A v2 algorithm's name carries only
-- a digest of its options; this table holds the options themselves (their canonical encoding,
-- kept as text so the digest can be checked again), so that `replayctl plan` and an instance with
-- other options can recompute an incoming payload under the algorithm a stored row was written
-- with, instead of skipping the conflict check. The SDK registers its algorithm before it claims
-- a row under it. The newest last_registered_at is the consumer's current algorithm. Rows are
-- small, one per options change, and never pruned: a row under an algorithm may outlive the
-- instances that wrote it.
create table fingerprint_algorithms (
    consumer            text        not null,
    algorithm           text        not null,
    options             text        not null,
    first_registered_at timestamptz not null default now(),
    last_registered_at  timestamptz not null default now(),
    primary key (consumer, algorithm)
);
