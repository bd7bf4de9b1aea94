// The ledger statements the consumer sends: the Go SDK's own (ledger/effects.go, expired.go,
// fingerprints.go, effect_versions.go, delivery_counts.go, groupcommit_statements.go,
// groupcommit_claims.go, reconcile.go, queries.go), with the same parameters, so a
// TypeScript instance and a Go instance on one durable keep the same compare-and-set rules. A Go
// test (ledger/sdk_typescript_sql_test.go) fails when one of them differs from Go's; only the read
// of events' rows (effectsForEvents) is this SDK's own.

import pg, { type Pool } from "pg";

import { tombstoneKey } from "./tombstone.js";

/** One effects row, as the consumer reads it. */
export interface EffectRow {
  effectVersion: number;
  state: string;
  requestHash: string;
  requestHashAlg: string;
  externalRefs: unknown[];
  leaseOwner: string;
  leaseLive: boolean;
  leaseRemainingMs: number;
  callsStarted: number;
  lastError: string;
  writeForbidden: boolean;
}

/** Names one row. */
export interface EffectKey {
  consumer: string;
  eventId: string;
  effectVersion: number;
}

const leasedRow = "consumer = $1 and event_id = $2 and effect_version + 0 = $3";
const stateProcessing = "state || '' = 'processing'";

// effectsForEvents reads the rows of many events at once (the reads of concurrent handlers as one
// query; a lone handler's too) and, in the same round trip, their compact tombstones (migration
// 0035), each of which stands for the expired row of its version when that version has no
// effects row and matches any payload (algorithm "none"). Each row is numbered by its event's
// position. The lateral join keeps every look-up on the primary key whatever the planner guesses
// of the arrays' length.
const effectsForEvents = `
select k.i, e.* from unnest($2::text[]) with ordinality as k(event_id, i)
 cross join lateral (
   select effect_version, state, request_hash, request_hash_alg, external_refs, coalesce(lease_owner, '') as lease_owner,
          coalesce(lease_expires_at > now(), false) as lease_live,
          greatest(coalesce(extract(epoch from lease_expires_at - now()) * 1000, 0), 0)::bigint as lease_remaining_ms,
          calls_started, coalesce(last_error, '') as last_error, write_forbidden, false as compact
     from effects where consumer = $1 and event_id = k.event_id) e
union all
select k.i, t.effect_version, 'expired', 'none', 'none', '[]'::jsonb, '', false, 0::bigint, 0, '', false, true
  from unnest($3::bigint[]) with ordinality as k(key, i)
  join effect_tombstones t on t.key = k.key
  join effect_tombstone_consumers c on c.id = t.consumer_key
 where c.consumer = $1`

/** The rows of each of eventIds, lowest version first, its compact tombstones among them, in one query. */
export async function effectsForEventsRows(pool: Pool, consumer: string, eventIds: string[]): Promise<EffectRow[][]> {
  const keys = eventIds.map((id) => tombstoneKey(consumer, id).toString());
  const rows = await pool.query(effectsForEvents, [consumer, eventIds, keys]);
  const byEvent: Record<string, unknown>[][] = eventIds.map(() => []);
  for (const r of rows.rows) byEvent[Number(r.i) - 1].push(r);
  return byEvent.map(eventRows);
}

// eventRows is one event's rows, a compact tombstone only where its version has no effects row.
// Compact tombstones may repeat a version (prune gives every row it moves its own): each counts once.
function eventRows(rows: any[]): EffectRow[] {
  const seen = new Set(rows.filter((r) => !r.compact).map((r) => r.effect_version));
  const kept = rows.filter((r) => {
    if (!r.compact) return true;
    if (seen.has(r.effect_version)) return false;
    seen.add(r.effect_version);
    return true;
  });
  const out: EffectRow[] = kept.map((r) => ({
    effectVersion: r.effect_version,
    state: r.state,
    requestHash: r.request_hash,
    requestHashAlg: r.request_hash_alg,
    externalRefs: r.external_refs ?? [],
    leaseOwner: r.lease_owner,
    leaseLive: r.lease_live,
    leaseRemainingMs: Number(r.lease_remaining_ms),
    callsStarted: r.calls_started,
    lastError: r.last_error,
    writeForbidden: r.write_forbidden,
  }));
  return out.sort((a, b) => a.effectVersion - b.effectVersion);
}

const claimLock = `select pg_advisory_xact_lock(hashtextextended(current_schema() || ':replayctl.effect.' || $1::text || chr(31) || $2::text, 0))`

const claimUpsert = `
insert into effects as e (consumer, event_id, effect_version, state, request_hash, request_hash_alg,
                          lease_owner, lease_expires_at, heartbeat_at, job_id, attempts, calls_started)
select $1, $2, $3, 'processing', $4, $5, $6, now() + $7::bigint * interval '1 millisecond', now(), $8, 1, 0
 where not exists (
        select 1 from effects o
         where o.consumer = $1 and o.event_id = $2 and o.effect_version <> $3
           and (o.state = 'uncertain'
                or (o.state = 'processing' and o.lease_expires_at > now())
                or ($9 and o.state in ('completed', 'reconciled', 'expired') and not o.write_forbidden)))
on conflict (consumer, event_id, effect_version) do update
   set state = 'processing', lease_owner = excluded.lease_owner, lease_expires_at = excluded.lease_expires_at,
       heartbeat_at = excluded.heartbeat_at, attempts = e.attempts + 1, calls_started = 0,
       job_id = coalesce(excluded.job_id, e.job_id), request_hash = excluded.request_hash,
       request_hash_alg = excluded.request_hash_alg, updated_at = now()
 where (e.state = 'received'
        or (e.state = 'processing' and (e.lease_expires_at is null or e.lease_expires_at <= now())
            and e.calls_started = 0))
   and e.request_hash_alg = $10 and e.request_hash = $11`

/** A claim of one row's lease. */
export interface Claim {
  key: EffectKey;
  requestHash: string;
  requestHashAlg: string;
  owner: string;
  leaseMs: number;
  jobId: string;
  anyVersionSettles: boolean;
  /** The fingerprint an existing row of the key must hold to be taken over. */
  takeOverHash: string;
  takeOverHashAlg: string;
}

/**
 * Takes the lease on c.key (a new row, or one received or lapsed before any call); false when not.
 * The lock and the upsert go as one simple-protocol query: one round trip and one implicit
 * transaction, so the lock is held exactly as long as the claim (the Go SDK sends them as one
 * batch). The upsert runs after the lock, in a snapshot of its own, so it sees every other version's
 * committed row. Its values are written into the text as escaped literals, which the simple
 * protocol needs. A claim needs no durability of its own (ledger/claim_flush.go): the call-started
 * mark and the completion commit synchronously after it, so its commit does not wait for the flush.
 */
export async function claim(pool: Pool, c: Claim): Promise<boolean> {
  const lit = (v: string | number | boolean | null): string =>
    v === null ? "null" : typeof v === "string" ? pg.escapeLiteral(v) : String(v);
  const values = [c.key.consumer, c.key.eventId, c.key.effectVersion, c.requestHash, c.requestHashAlg, c.owner, c.leaseMs,
    c.jobId || null, c.anyVersionSettles, c.takeOverHashAlg, c.takeOverHash];
  const inline = (sql: string) => sql.replace(/\$(\d+)/g, (_, n) => lit(values[Number(n) - 1]));
  const text = `select set_config('synchronous_commit', 'off', true); ${inline(claimLock)}; ${inline(claimUpsert)}`;
  const results = (await pool.query(text)) as unknown as pg.QueryResult[];
  return results[2].rowCount === 1;
}

const heartbeatSQL = `
update effects
   set lease_expires_at = now() + $5::bigint * interval '1 millisecond', heartbeat_at = now(), updated_at = now()
 where ${leasedRow} and lease_owner = $4 and ${stateProcessing}`

/** Extends owner's lease; false when it is no longer owner's. */
export async function heartbeat(pool: Pool, key: EffectKey, owner: string, leaseMs: number): Promise<boolean> {
  const r = await pool.query(heartbeatSQL, [key.consumer, key.eventId, key.effectVersion, owner, leaseMs]);
  return r.rowCount === 1;
}

const callStartedSQL = `
update effects set calls_started = greatest(calls_started, $5), updated_at = now()
 where ${leasedRow} and lease_owner = $4 and ${stateProcessing}
   and lease_expires_at > now()`

/** Records, before external call number ordinal is made, that it starts; false: do not make it. */
export async function callStarted(pool: Pool, key: EffectKey, owner: string, ordinal: number): Promise<boolean> {
  const r = await pool.query(callStartedSQL, [key.consumer, key.eventId, key.effectVersion, owner, ordinal]);
  return r.rowCount === 1;
}

const completeSQL = `
with done as (
update effects
   set state = 'completed', result_hash = $5, result_body = null, outcome_kind = $7, effect_count = $8,
       external_refs = $9::jsonb, last_error = $10, lease_owner = null, lease_expires_at = null,
       replay_until = now() + $11::bigint * interval '1 millisecond',
       evidence_until = now() + $12::bigint * interval '1 millisecond', write_forbidden = $13, updated_at = now()
 where ${leasedRow} and lease_owner = $4 and ${stateProcessing}
returning consumer, event_id, effect_version, replay_until),
body as (
insert into effect_bodies (consumer, event_id, effect_version, replay_until, body)
select consumer, event_id, effect_version, replay_until, $6::jsonb from done where $6::jsonb is not null
on conflict do nothing)
select count(*) from done`

/** A handled event's outcome. */
export interface Completion {
  key: EffectKey;
  owner: string;
  resultHash: string;
  resultBody: string | null;
  outcomeKind: string;
  effectCount: number;
  externalRefs: unknown[];
  lastError: string;
  writeForbidden: boolean;
  resultRetentionMs: number;
  evidenceRetentionMs: number;
}

/** Stores the outcome and releases the lease; false when owner no longer held it. */
export async function complete(pool: Pool, c: Completion): Promise<boolean> {
  const r = await pool.query({ text: completeSQL, rowMode: "array" }, [c.key.consumer, c.key.eventId, c.key.effectVersion, c.owner, c.resultHash,
    c.resultBody, c.outcomeKind || null, c.effectCount, JSON.stringify(c.externalRefs), c.lastError || null,
    c.resultRetentionMs, c.evidenceRetentionMs, c.writeForbidden]);
  return Number(r.rows[0][0]) === 1;
}

const markUncertainSQL = `
update effects
   set state = 'uncertain', effect_count = $5, external_refs = $6::jsonb, last_error = $7,
       lease_expires_at = null, updated_at = now()
 where ${leasedRow} and lease_owner = $4 and ${stateProcessing}`

/** Marks owner's row uncertain: a call may have happened; never retried. */
export async function markUncertain(pool: Pool, key: EffectKey, owner: string, effectCount: number, refs: unknown[], why: string): Promise<boolean> {
  const r = await pool.query(markUncertainSQL, [key.consumer, key.eventId, key.effectVersion, owner, effectCount, JSON.stringify(refs), why]);
  return r.rowCount === 1;
}

const markLapsedUncertainSQL = `
update effects
   set state = 'uncertain', updated_at = now(),
       last_error = 'lease of ' || coalesce(lease_owner, 'an unknown owner') || ' lapsed after ' || calls_started ||
                    ' external call(s) started; their outcome is unknown: review by hand'
 where ${leasedRow} and ${stateProcessing}
   and (lease_expires_at is null or lease_expires_at <= now()) and calls_started > 0`

/** Marks key uncertain if its lease lapsed after a call started; false when it no longer qualifies. */
export async function markLapsedUncertain(pool: Pool, key: EffectKey): Promise<boolean> {
  const r = await pool.query(markLapsedUncertainSQL, [key.consumer, key.eventId, key.effectVersion]);
  return r.rowCount === 1;
}

const releaseSQL = `
update effects
   set state = 'received', lease_owner = null, lease_expires_at = null, calls_started = 0,
       outcome_kind = 'transient', last_error = $5, updated_at = now()
 where ${leasedRow} and lease_owner = $4 and ${stateProcessing}`

/** Gives up owner's lease after a transient failure with no call made. */
export async function release(pool: Pool, key: EffectKey, owner: string, why: string): Promise<boolean> {
  const r = await pool.query(releaseSQL, [key.consumer, key.eventId, key.effectVersion, owner, why]);
  return r.rowCount === 1;
}

const isExecutingSQL = `
select exists (select from effect_versions
                where consumer = $1 and effect_version = $2 and state = 'executing' and job_id = $3),
       coalesce((select source_kind from jobs where id = $3), 'dlq')`

/** Whether a replay's (job, version) is registered as executing, and the job's source kind. */
export async function replayExecuting(pool: Pool, consumer: string, version: number, jobId: string): Promise<{ executing: boolean; sourceKind: string }> {
  const r = await pool.query({ text: isExecutingSQL, rowMode: "array" }, [consumer, version, jobId]);
  return { executing: r.rows[0][0], sourceKind: r.rows[0][1] };
}

const registerAlgorithmSQL = `
insert into fingerprint_algorithms as f (consumer, algorithm, options) values ($1, $2, $3)
on conflict (consumer, algorithm) do update set last_registered_at = now()
 where f.options = excluded.options`

/** Registers the consumer's fingerprint algorithm and options before rows are written under it. */
export async function registerAlgorithm(pool: Pool, consumer: string, algorithm: string, options: string): Promise<void> {
  const r = await pool.query(registerAlgorithmSQL, [consumer, algorithm, options]);
  if (r.rowCount === 0) {
    throw new Error(`fingerprint algorithm ${algorithm} of consumer ${consumer} is registered with other options: change the options so their digest differs`);
  }
}

const applyExpiredVerdictSQL = `
with settled as (
    insert into effects as e (consumer, event_id, effect_version, state, request_hash, request_hash_alg,
                              external_refs, effect_count, job_id, last_error, review_state, review_verdict,
                              review_note, reviewed_at, reviewed_by, replay_until, evidence_until)
    values ($1, $2, $3, $4::text, $5, $6, $7::jsonb, jsonb_array_length($7::jsonb), $8, $9, $10, $11, $12, now(), $13,
            case when $4::text = 'reconciled' then now() end,
            case when $4::text = 'reconciled' then now() + $14::bigint * interval '1 millisecond' end)
    on conflict (consumer, event_id, effect_version) do update
       set state = excluded.state,
           external_refs = e.external_refs || coalesce((select jsonb_agg(distinct f) from jsonb_array_elements(excluded.external_refs) f
                                                          where not e.external_refs @> jsonb_build_array(f)), '[]'::jsonb),
           last_error = excluded.last_error, review_state = excluded.review_state,
           review_verdict = excluded.review_verdict, review_note = excluded.review_note,
           reviewed_at = excluded.reviewed_at, reviewed_by = excluded.reviewed_by,
           replay_until = excluded.replay_until, evidence_until = excluded.evidence_until, updated_at = now()
     where e.state = 'expired'
    returning e.event_id)
select audit_append(null, $13, $8, null, 'consumer.evidence_expired',
       jsonb_build_object('consumer', $1::text, 'eventId', $2::text, 'effectVersion', $3::int,
                          'verdict', $11::text, 'state', $4::text, 'detail', $12::text), $1::text)
  from settled`

/** A look-up's verdict on an event whose evidence expired: happened, or anything else. */
export interface ExpiredVerdict {
  key: EffectKey;
  requestHash: string;
  requestHashAlg: string;
  verdict: string;
  note: string;
  externalRefs: unknown[];
  jobId: string;
  actor: string;
  evidenceRetentionMs: number;
}

/** Records v: reconciled for happened, uncertain for manual review otherwise; false when the row moved on. */
export async function applyExpiredVerdict(pool: Pool, v: ExpiredVerdict): Promise<boolean> {
  const happened = v.verdict === "happened";
  const r = await pool.query(applyExpiredVerdictSQL, [v.key.consumer, v.key.eventId, v.key.effectVersion,
    happened ? "reconciled" : "uncertain", v.requestHash, v.requestHashAlg, JSON.stringify(v.externalRefs), v.jobId || null,
    happened ? null : `the ledger's evidence of this event expired and the look-up did not prove what happened (${v.verdict}): review it by hand`,
    happened ? null : "manual_review", v.verdict, v.note || null, v.actor, v.evidenceRetentionMs]);
  return (r.rowCount ?? 0) === 1;
}

const reopenExpiredSQL = `
with reopened as (
    update effects
       set state = 'received', replay_until = null, evidence_until = null, review_verdict = 'not_happened',
           review_note = $4, reviewed_at = now(), reviewed_by = $5, updated_at = now()
     where consumer = $1 and event_id = $2 and effect_version = any($3::int[]) and state = 'expired'
    returning effect_version, job_id),
compact as (
    select distinct t.effect_version,
           case when t.flags & 2 <> 0 then 'reconciled' else 'completed' end as final_state
      from effect_tombstones t
     where t.key = effect_tombstone_key($1::text, $2::text) and t.effect_version = any($3::int[])
       and not exists (select 1 from effects x where x.consumer = $1 and x.event_id = $2 and x.effect_version = t.effect_version)),
revived as (
    insert into effects (consumer, event_id, effect_version, state, final_state, request_hash, request_hash_alg,
                         review_verdict, review_note, reviewed_at, reviewed_by)
    select $1, $2, c.effect_version, 'received', c.final_state, 'none', 'none', 'not_happened', $4, now(), $5
      from compact c
    on conflict (consumer, event_id, effect_version) do nothing
    returning effect_version, job_id)
select audit_append(null, $5, job_id, null, 'consumer.evidence_expired',
       jsonb_build_object('consumer', $1::text, 'eventId', $2::text, 'effectVersion', effect_version,
                          'verdict', 'not_happened', 'state', 'received', 'detail', $4::text), $1::text)
  from (select * from reopened union all select * from revived) r`

/** Turns eventId's tombstones under versions back into received rows after the look-up said not happened. */
export async function reopenExpired(pool: Pool, consumer: string, eventId: string, versions: number[], note: string, actor: string): Promise<number> {
  const r = await pool.query(reopenExpiredSQL, [consumer, eventId, versions, note || null, actor]);
  return r.rowCount ?? 0;
}

const deliveryCountsAddSQL = `
insert into delivery_counts as d (consumer, day, deliveries, duplicate_deliveries)
values ($1, (now() at time zone 'utc')::date, $2, $3)
on conflict (consumer, day) do update
   set deliveries           = d.deliveries + excluded.deliveries,
       duplicate_deliveries = d.duplicate_deliveries + excluded.duplicate_deliveries,
       updated_at           = now()`

/** Adds to the consumer's delivery counts of today, which `replayctl ledger stats` reads. */
export async function deliveryCountsAdd(pool: Pool, consumer: string, deliveries: number, duplicates: number): Promise<void> {
  if (deliveries === 0 && duplicates === 0) return;
  await pool.query(deliveryCountsAddSQL, [consumer, deliveries, duplicates]);
}

const uncertainSummarySQL = `
select count(*), coalesce(max(greatest(extract(epoch from now() - updated_at) * 1000, 0)), 0)::bigint
  from effects where consumer = $1 and state = 'uncertain'`

/** The consumer's uncertain rows and how long the oldest has been uncertain. */
export async function uncertainSummary(pool: Pool, consumer: string): Promise<{ count: number; oldestMs: number }> {
  const r = await pool.query({ text: uncertainSummarySQL, rowMode: "array" }, [consumer]);
  return { count: Number(r.rows[0][0]), oldestMs: Number(r.rows[0][1]) };
}

// The batched forms of the claim, the call-started mark, the completion and the heartbeat: the Go
// SDK's (ledger/groupcommit_statements.go, groupcommit_claims.go), rows given as parallel arrays,
// each updated row returning its request's position. Keys in one batch are distinct (the group
// committer ensures it), so a row answers exactly one request.
const batchedRow = `e.consumer = r.consumer and e.event_id = r.event_id and e.effect_version + 0 = r.effect_version
   and e.lease_owner = r.owner and e.state || '' = 'processing'`

const callStartedBatchSQL = `
update effects e set calls_started = greatest(e.calls_started, r.ordinal), updated_at = now()
  from unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::int[])
       with ordinality as r(consumer, event_id, effect_version, owner, ordinal, i)
 where ${batchedRow} and e.lease_expires_at > now()
returning r.i`

const heartbeatBatchSQL = `
update effects e
   set lease_expires_at = now() + r.lease_ms * interval '1 millisecond', heartbeat_at = now(), updated_at = now()
  from unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::bigint[])
       with ordinality as r(consumer, event_id, effect_version, owner, lease_ms, i)
 where ${batchedRow}
returning r.i`

const completeBatchSQL = `
with done as (
update effects e
   set state = 'completed', result_hash = r.result_hash, result_body = null,
       outcome_kind = r.outcome_kind, effect_count = r.effect_count, external_refs = r.external_refs::jsonb,
       last_error = r.last_error, lease_owner = null, lease_expires_at = null,
       replay_until = now() + r.result_ms * interval '1 millisecond',
       evidence_until = now() + r.evidence_ms * interval '1 millisecond', write_forbidden = r.write_forbidden,
       updated_at = now()
  from unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[],
              $9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::bool[])
       with ordinality as r(consumer, event_id, effect_version, owner, result_hash, result_body, outcome_kind,
                            effect_count, external_refs, last_error, result_ms, evidence_ms, write_forbidden, i)
 where ${batchedRow}
returning r.i, e.consumer, e.event_id, e.effect_version, e.replay_until, r.result_body),
body as (
insert into effect_bodies (consumer, event_id, effect_version, replay_until, body)
select consumer, event_id, effect_version, replay_until, result_body::jsonb from done where result_body is not null
on conflict do nothing)
select i from done`

const claimLockBatchSQL = `
select count(*) from (
  select pg_advisory_xact_lock(l.id)
    from (select hashtextextended(current_schema() || ':replayctl.effect.' || u.consumer || chr(31) || u.event_id, 0) as id
            from unnest($1::text[], $2::text[]) as u(consumer, event_id)
           order by 1) as l) as locked`

const claimBatchSQL = `
with r as (
  select * from unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::bigint[],
                       $8::text[], $9::bool[], $10::text[], $11::text[])
         as r(consumer, event_id, effect_version, request_hash, request_hash_alg, owner, lease_ms,
              job_id, any_version_settles, take_over_alg, take_over_hash)
   where not exists (
          select 1 from effects o
           where o.consumer = r.consumer and o.event_id = r.event_id and o.effect_version <> r.effect_version
             and (o.state = 'uncertain'
                  or (o.state = 'processing' and o.lease_expires_at > now())
                  or (r.any_version_settles and o.state in ('completed', 'reconciled', 'expired') and not o.write_forbidden)))
), taken as (
  update effects e
     set state = 'processing', lease_owner = r.owner, lease_expires_at = now() + r.lease_ms * interval '1 millisecond',
         heartbeat_at = now(), attempts = e.attempts + 1, calls_started = 0, job_id = coalesce(r.job_id, e.job_id),
         request_hash = r.request_hash, request_hash_alg = r.request_hash_alg, updated_at = now()
    from r
   where e.consumer = r.consumer and e.event_id = r.event_id and e.effect_version + 0 = r.effect_version
     and (e.state = 'received'
          or (e.state = 'processing' and (e.lease_expires_at is null or e.lease_expires_at <= now())
              and e.calls_started = 0))
     and e.request_hash_alg = r.take_over_alg and e.request_hash = r.take_over_hash
  returning e.consumer, e.event_id
), inserted as (
  insert into effects (consumer, event_id, effect_version, state, request_hash, request_hash_alg,
                       lease_owner, lease_expires_at, heartbeat_at, job_id, attempts, calls_started)
  select r.consumer, r.event_id, r.effect_version, 'processing', r.request_hash, r.request_hash_alg, r.owner,
         now() + r.lease_ms * interval '1 millisecond', now(), r.job_id, 1, 0
    from r
   where not exists (select 1 from effects x
                      where x.consumer = r.consumer and x.event_id = r.event_id and x.effect_version + 0 = r.effect_version)
  on conflict (consumer, event_id, effect_version) do nothing
  returning consumer, event_id
)
select consumer, event_id from taken union all select consumer, event_id from inserted`

// positions turns a batched update's returned positions (1-based) into one answer per request.
function positions(n: number, rows: unknown[][]): boolean[] {
  const oks = new Array<boolean>(n).fill(false);
  for (const [p] of rows) {
    const i = Number(p);
    if (!(i >= 1 && i <= n)) throw new Error(`a batched update returned position ${i} of ${n}`);
    oks[i - 1] = true;
  }
  return oks;
}

function keyColumns(keys: EffectKey[]): [string[], string[], number[]] {
  return [keys.map((k) => k.consumer), keys.map((k) => k.eventId), keys.map((k) => k.effectVersion)];
}

/** Marks a started call for each of marks in one statement; false where the lease is gone. */
export async function callStartedBatch(pool: Pool, marks: { key: EffectKey; owner: string; ordinal: number }[]): Promise<boolean[]> {
  const r = await pool.query({ text: callStartedBatchSQL, rowMode: "array" }, [...keyColumns(marks.map((m) => m.key)),
    marks.map((m) => m.owner), marks.map((m) => m.ordinal)]);
  return positions(marks.length, r.rows);
}

/** Extends each of beats' leases in one statement; false where it is no longer the owner's. */
export async function heartbeatBatch(pool: Pool, beats: { key: EffectKey; owner: string; leaseMs: number }[]): Promise<boolean[]> {
  const r = await pool.query({ text: heartbeatBatchSQL, rowMode: "array" }, [...keyColumns(beats.map((b) => b.key)),
    beats.map((b) => b.owner), beats.map((b) => b.leaseMs)]);
  return positions(beats.length, r.rows);
}

/** Stores each of cs's outcomes in one statement; false where the owner no longer held the lease. */
export async function completeBatch(pool: Pool, cs: Completion[]): Promise<boolean[]> {
  const r = await pool.query({ text: completeBatchSQL, rowMode: "array" }, [...keyColumns(cs.map((c) => c.key)),
    cs.map((c) => c.owner), cs.map((c) => c.resultHash), cs.map((c) => c.resultBody), cs.map((c) => c.outcomeKind || null),
    cs.map((c) => c.effectCount), cs.map((c) => JSON.stringify(c.externalRefs)), cs.map((c) => c.lastError || null),
    cs.map((c) => c.resultRetentionMs), cs.map((c) => c.evidenceRetentionMs), cs.map((c) => c.writeForbidden)]);
  return positions(cs.length, r.rows);
}

/**
 * Claims of distinct events in one transaction: their locks in the order of the lock IDs (two
 * batches, of this instance or another, then wait for each other in one direction and never
 * deadlock), then the claims, from one snapshot taken after the locks. Like a single claim it
 * needs no durability of its own (ledger/claim_flush.go).
 */
export async function claimBatch(pool: Pool, cs: Claim[]): Promise<boolean[]> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("begin; select set_config('synchronous_commit', 'off', true)");
    const [consumers, events, versions] = keyColumns(cs.map((c) => c.key));
    await client.query(claimLockBatchSQL, [consumers, events]);
    const r = await client.query({ text: claimBatchSQL, rowMode: "array" }, [consumers, events, versions,
      cs.map((c) => c.requestHash), cs.map((c) => c.requestHashAlg), cs.map((c) => c.owner), cs.map((c) => c.leaseMs),
      cs.map((c) => c.jobId || null), cs.map((c) => c.anyVersionSettles), cs.map((c) => c.takeOverHashAlg),
      cs.map((c) => c.takeOverHash)]);
    await client.query("commit");
    const position = new Map(cs.map((c, i) => [`${c.key.consumer}\u001f${c.key.eventId}`, i]));
    const oks = new Array<boolean>(cs.length).fill(false);
    for (const [consumer, eventId] of r.rows) {
      const i = position.get(`${consumer}\u001f${eventId}`);
      if (i === undefined) throw new Error(`a batched claim returned event ${JSON.stringify(eventId)} of consumer ${consumer}, not in its batch`);
      oks[i] = true;
    }
    return oks;
  } catch (e) {
    await client.query("rollback").catch((rollbackFailed: Error) => (broken = rollbackFailed));
    throw e;
  } finally {
    client.release(broken);
  }
}

// The reconcile worker's statements: the Go SDK's (ledger/reconcile.go, queries.go), which
// `replayctl reconcile` sends too. $1 consumer, $2 job ('' for all), $3 older than (ms), $4/$5 the
// cursor, $6 the limit, $7 due only, $8 the longest wait between look-ups (ms); the stuck page
// adds $9, how long after its lease lapsed a lease with a call started counts as stuck (ms).
const uncertainRowFrom = `
select event_id, effect_version, state, coalesce(job_id, ''), request_hash, request_hash_alg, effect_count, calls_started,
       external_refs, coalesce(lease_owner, ''), coalesce(last_error, ''), updated_at,
       greatest(extract(epoch from now() - updated_at) * 1000, 0)::bigint,
       coalesce(review_state, ''), coalesce(review_verdict, ''), coalesce(review_note, ''), reviewed_at,
       coalesce(reviewed_by, '')
  from effects`

const uncertainPageOf = `
   and ($2 = '' or job_id = $2)
   and updated_at <= now() - $3::bigint * interval '1 millisecond'
   and (not $7::boolean or reviewed_at is null
        or now() - reviewed_at >= least(greatest(reviewed_at - updated_at, $3::bigint * interval '1 millisecond'),
                                        $8::bigint * interval '1 millisecond'))
   and (event_id collate "C", effect_version) > ($4::text collate "C", $5::integer)
 order by event_id collate "C", effect_version
 limit $6`

const uncertainPageSQL = `${uncertainRowFrom}
 where consumer = $1 and state = 'uncertain'${uncertainPageOf}`

const stuckPageSQL = `${uncertainRowFrom}
 where consumer = $1 and state = 'processing' and calls_started > 0
   and lease_expires_at < now() - $9::bigint * interval '1 millisecond'${uncertainPageOf}`

const reconcileApplySQL = `
with v as (
    select * from unnest($2::text[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::timestamptz[],
                         $11::boolean[], $13::boolean[])
           as v(event_id, effect_version, verdict, refs, note, seen_updated_at, seen_reviewed_at, stuck, resolved)
),
changed as (
    update effects e
       set state          = case when v.verdict = 'happened' then 'reconciled'
                                 when v.resolved then 'received' else 'uncertain' end,
           external_refs  = case when v.verdict = 'happened'
                                 then e.external_refs || coalesce((select jsonb_agg(distinct f) from jsonb_array_elements(v.refs::jsonb) f
                                                                    where not e.external_refs @> jsonb_build_array(f)), '[]'::jsonb)
                                 else e.external_refs end,
           effect_count   = case when v.verdict = 'happened' then greatest(e.effect_count, e.calls_started)
                                 else e.effect_count end,
           calls_started  = case when v.resolved and v.verdict <> 'happened' then 0 else e.calls_started end,
           review_state   = case when v.verdict = 'happened' or v.resolved then null else 'manual_review' end,
           review_verdict = v.verdict,
           review_note    = nullif(v.note, ''),
           reviewed_at    = now(),
           reviewed_by    = $9,
           lease_expires_at = null,
           updated_at     = case when v.verdict = 'happened' or v.stuck or v.resolved then now() else e.updated_at end
      from v
     where e.consumer = $1 and e.event_id = v.event_id and e.effect_version = v.effect_version
       and case when v.stuck
                then e.state = 'processing' and e.calls_started > 0
                     and e.lease_expires_at < now() - $12::bigint * interval '1 millisecond'
                else e.state = 'uncertain' end
       and (not v.resolved or v.verdict in ('happened', 'not_happened'))
       and e.updated_at = v.seen_updated_at
       and e.reviewed_at is not distinct from v.seen_reviewed_at
 returning e.event_id, e.effect_version, e.state, e.job_id, e.review_verdict, e.review_note,
           jsonb_array_length(e.external_refs) as refs, v.stuck, v.resolved
),
targets as (
    update job_targets t
       set status = case when c.state = 'reconciled' then 'completed' when c.state = 'received' then 'failed' else t.status end,
           outcome_detail = case when c.state = 'reconciled' then null
                                 when c.state = 'received'
                                 then left('resolved not_happened by ' || $9 || coalesce(': ' || c.review_note, '')
                                           || '; eligible for a new plan', 500)
                                 else left('manual review (look-up: ' || c.review_verdict || ')'
                                           || coalesce(': ' || c.review_note, ''), 500) end,
           updated_at = now()
      from changed c
      join jobs j on j.id = c.job_id and j.effect_version_to = c.effect_version
     where t.job_id = c.job_id and t.event_id = c.event_id and t.status in ('published', 'uncertain')
 returning t.job_id, t.event_id
),
audited as (
    -- Through audit_append, so each entry joins the consumer's hash chain; the main query counts
    -- these rows, which makes PostgreSQL run the CTE (a plain SELECT in WITH runs only if read).
    select audit_append(null, $9, c.job_id, null,
           case when c.resolved then 'reconcile.resolved'
                when c.state = 'reconciled' then 'reconcile.reconciled' else 'reconcile.manual_review' end,
           jsonb_build_object('run', $10::text, 'consumer', $1::text, 'eventId', c.event_id,
                              'effectVersion', c.effect_version, 'verdict', c.review_verdict,
                              'from', case when c.stuck then 'processing (stuck lease)' else 'uncertain' end,
                              'to', case when c.state = 'reconciled' then 'reconciled'
                                         when c.state = 'received' then 'received (eligible for a new plan)'
                                         else 'uncertain/manual_review' end,
                              'externalRefs', c.refs, 'detail', c.review_note), $1::text) as entry_id
      from changed c
)
select c.event_id, c.effect_version, c.state, coalesce(c.job_id, ''),
       exists (select 1 from targets t where t.job_id = c.job_id and t.event_id = c.event_id)
  from changed c
 where (select count(*) from audited) >= 0
 order by c.event_id collate "C", c.effect_version`

const auditInsertSQL = `select audit_append($1::timestamptz, $2, $3, $4, $5, $6::jsonb, '')`

/** A row the reconcile worker asks about: uncertain, or a stuck lease with a call started. */
export interface UncertainRow {
  eventId: string;
  effectVersion: number;
  jobId: string;
  requestHash: string;
  requestHashAlg: string;
  callsStarted: number;
  externalRefs: unknown;
  /** updated_at and reviewed_at as PostgreSQL wrote them (microseconds): the compare-and-set's. */
  seenUpdatedAt: string;
  seenReviewedAt: string | null;
  stuck: boolean;
}

// Timestamps stay text: a Date keeps milliseconds, and the compare-and-set compares microseconds.
const timestampsAsText = {
  getTypeParser: (oid: number, format?: "text" | "binary") =>
    oid === 1184 ? (v: string) => v : (pg.types.getTypeParser as (o: number, f?: string) => (v: string) => unknown)(oid, format),
};

/** Up to limit of consumer's rows due for a look-up, uncertain (or stuck) for olderThanMs, oldest look-ups first by event. */
export async function uncertainPage(pool: Pool, consumer: string, stuck: boolean, olderThanMs: number, limit: number,
  maxBackoffMs: number, stuckAfterMs: number): Promise<UncertainRow[]> {
  const args: unknown[] = [consumer, "", olderThanMs, "", -1, limit, true, maxBackoffMs];
  if (stuck) args.push(stuckAfterMs);
  const r = await pool.query({ text: stuck ? stuckPageSQL : uncertainPageSQL, rowMode: "array", types: timestampsAsText }, args);
  return r.rows.map((c) => ({ eventId: c[0], effectVersion: c[1], jobId: c[3], requestHash: c[4], requestHashAlg: c[5],
    callsStarted: c[7], externalRefs: c[8], seenUpdatedAt: c[11], seenReviewedAt: c[16], stuck }));
}

/** One look-up verdict for a listed row. */
export interface ReconcileVerdict {
  row: UncertainRow;
  verdict: "happened" | "not_happened" | "unknown";
  foundRefs: unknown[];
  note: string;
}

/** Applies verdicts in one statement with reconcile's compare-and-set; returns the rows changed and their new state. */
export async function reconcileApply(pool: Pool, consumer: string, actor: string, runId: string, verdicts: ReconcileVerdict[],
  stuckAfterMs: number): Promise<{ eventId: string; effectVersion: number; state: string }[]> {
  const r = await pool.query({ text: reconcileApplySQL, rowMode: "array" }, [consumer, verdicts.map((v) => v.row.eventId),
    verdicts.map((v) => v.row.effectVersion), verdicts.map((v) => v.verdict), verdicts.map((v) => JSON.stringify(v.foundRefs)),
    verdicts.map((v) => v.note), verdicts.map((v) => v.row.seenUpdatedAt), verdicts.map((v) => v.row.seenReviewedAt), actor, runId,
    verdicts.map((v) => v.row.stuck), stuckAfterMs, verdicts.map(() => false)]);
  return r.rows.map((c) => ({ eventId: c[0], effectVersion: c[1], state: c[2] }));
}

/** Appends an audit entry (the consumer's hash chain when details name it). */
export async function auditInsert(pool: Pool, actor: string, action: string, details: object): Promise<void> {
  await pool.query(auditInsertSQL, [null, actor, null, null, action, JSON.stringify(details)]);
}
