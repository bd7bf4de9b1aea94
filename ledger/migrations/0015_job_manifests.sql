-- The sealed manifest of each job, byte for byte as plan wrote it to -o, so that every command
-- takes a job ID as well as the file, and `replayctl show JOB -o FILE` exports it again
-- identical. sha256 is over body: a stored manifest that no longer hashes to it is refused, as is
-- one whose own digest is not the job's manifest_digest. Written in plan's transaction with the
-- job; jobs planned before this migration have no row, and their commands take the file.
-- PostgreSQL compresses the JSON out of line (TOAST): a 1,000,000-target manifest is 28 MB.
create table job_manifests (
    job_id     text        primary key,
    sha256     text        not null,
    body       bytea       not null,
    stored_at  timestamptz not null default now()
);
