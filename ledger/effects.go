package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// EffectKey is the primary key of an effects row.
type EffectKey struct {
	Consumer      string
	EventID       string
	EffectVersion int
}

// String names the row in error messages and logs.
func (k EffectKey) String() string {
	return fmt.Sprintf("consumer %s event %q version %d", k.Consumer, k.EventID, k.EffectVersion)
}

// EffectRow is an effects row as the consumer SDK reads it. Lease liveness is judged by the
// database clock when the row is read, so LeaseLive and LeaseRemaining never depend on the
// reader's clock.
type EffectRow struct {
	Consumer       string
	EventID        string
	EffectVersion  int
	State          string
	RequestHash    string
	RequestHashAlg string
	ResultHash     string
	ResultBody     json.RawMessage
	OutcomeKind    string
	EffectCount    int
	ExternalRefs   json.RawMessage
	LeaseOwner     string
	LeaseExpiresAt *time.Time
	// LeaseLive is lease_expires_at > now() at read time.
	LeaseLive bool
	// LeaseRemaining is how long the lease had left at read time; 0 once it lapsed.
	LeaseRemaining time.Duration
	HeartbeatAt    *time.Time
	ReplayUntil    *time.Time
	EvidenceUntil  *time.Time
	JobID          string
	Attempts       int
	CallsStarted   int
	LastError      string
	// WriteForbidden marks the completion of a write-forbidden replay: a result, never an effect.
	WriteForbidden bool
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// effectBodyOf is the result body of the effects row the enclosing query reads (as effects): in
// the row itself when it completed before migration 0033 or by an older SDK, else in the one
// partition of effect_bodies its replay_until names.
const effectBodyOf = `coalesce(effects.result_body, (select b.body from effect_bodies b
        where b.consumer = effects.consumer and b.event_id = effects.event_id
          and b.effect_version = effects.effect_version and b.replay_until = effects.replay_until))`

// effectRowColumns are the columns scanEffectRow reads, in its order, from effects.
const effectRowColumns = `consumer, event_id, effect_version, state, request_hash, request_hash_alg,
       coalesce(result_hash, ''), ` + effectBodyOf + `, coalesce(outcome_kind, ''), effect_count, external_refs,
       coalesce(lease_owner, ''), lease_expires_at, coalesce(lease_expires_at > now(), false),
       greatest(coalesce(extract(epoch from lease_expires_at - now()) * 1000, 0), 0)::bigint,
       heartbeat_at, replay_until, evidence_until, coalesce(job_id, ''), attempts, calls_started,
       coalesce(last_error, ''), write_forbidden, created_at, updated_at`

const effectsForEvent = `
select ` + effectRowColumns + `
  from effects
 where consumer = $1 and event_id = $2
 order by effect_version`

// EffectsForEvent returns every row of eventID for consumer, one per effect version, lowest first.
// The SDK reads them all at once because dedup across versions (a live redelivery of an event a
// replay completed) and conflicts (a payload changed under any version) need the whole history.
// Its compact tombstones (compact_tombstones.go) come as expired rows of the versions that have
// no effects row, read in the same round trip.
func EffectsForEvent(ctx context.Context, q BatchQuerier, consumer, eventID string) ([]EffectRow, error) {
	out, compact, err := readEffectRows(ctx, q, []int64{tombstoneKey(consumer, eventID)}, effectsForEvent, consumer, eventID)
	if err != nil {
		return nil, fmt.Errorf("read the ledger rows of consumer %s event %q: %w", consumer, eventID, err)
	}
	return withCompactTombstones(out, consumer, eventID, compact), nil
}

// scanEffectRow reads the columns of effectsForEvent, in its order.
func scanEffectRow(row pgx.CollectableRow) (EffectRow, error) {
	var r EffectRow
	var body, refs []byte
	var remainingMS int64
	err := row.Scan(&r.Consumer, &r.EventID, &r.EffectVersion, &r.State, &r.RequestHash, &r.RequestHashAlg,
		&r.ResultHash, &body, &r.OutcomeKind, &r.EffectCount, &refs, &r.LeaseOwner, &r.LeaseExpiresAt,
		&r.LeaseLive, &remainingMS, &r.HeartbeatAt, &r.ReplayUntil, &r.EvidenceUntil, &r.JobID,
		&r.Attempts, &r.CallsStarted, &r.LastError, &r.WriteForbidden, &r.CreatedAt, &r.UpdatedAt)
	if body != nil {
		r.ResultBody = json.RawMessage(body)
	}
	r.ExternalRefs = json.RawMessage(refs)
	r.LeaseRemaining = time.Duration(remainingMS) * time.Millisecond
	return r, err
}

// EffectClaim asks for the lease on one row.
type EffectClaim struct {
	Key            EffectKey
	RequestHash    string
	RequestHashAlg string
	Owner          string
	Lease          time.Duration
	// JobID is the replay job; empty for a live message.
	JobID string
	// AnyVersionSettles makes a completed, reconciled or expired row under any version refuse the
	// claim, unless a write-forbidden replay wrote it: a live message or a DLQ replay is done once
	// any version did it for real, a backfill only once its own version did.
	AnyVersionSettles bool
	// TakeOverHash and TakeOverHashAlg are the incoming payload's fingerprint recomputed under the
	// algorithm of the existing row the caller read for Key; empty means RequestHash and
	// RequestHashAlg. An existing row is taken over only while it still holds exactly that
	// algorithm and hash, and the take-over stores RequestHash and RequestHashAlg, so a row read
	// under an older algorithm moves to the current one.
	TakeOverHash    string
	TakeOverHashAlg string
}

// takeOverFingerprint is what an existing row must hold for c to take it over.
func (c EffectClaim) takeOverFingerprint() (hash, alg string) {
	if c.TakeOverHashAlg == "" {
		return c.RequestHash, c.RequestHashAlg
	}
	return c.TakeOverHash, c.TakeOverHashAlg
}

// effectsClaimLock serialises the claims of one event across its versions until the claim's
// implicit transaction commits. Without it, a live copy (version 1) and its replay (version 2)
// insert different keys, neither sees the other's uncommitted row, and both call out.
const effectsClaimLock = `select pg_advisory_xact_lock(hashtextextended(current_schema() || ':replayctl.effect.' || $1::text || chr(31) || $2::text, 0))`

// One upsert instead of an insert followed by an update: the row appears already leased, and the
// conflict arm re-checks the take-over conditions on the latest row version under its lock, so two
// claimants can never both win. A row is taken over only while its stored algorithm and hash are
// the ones the caller recomputed the payload under ($10, $11): a fingerprint that differs, or an
// algorithm changed since the caller read the row, is never taken, even if the caller raced the
// conflict check; hashes of different algorithms are never compared blindly. Run after effectsClaimLock, the not-exists
// sees every other version's committed row: a live lease or an uncertain row under any version,
// or (for live messages, $9) a settled one, refuses the claim.
const effectsClaim = `
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

// EffectsClaim takes the lease on c.Key for c.Owner: it inserts the row, or takes over one that is
// received or whose lease lapsed before any external call started. It returns false, without
// error, when the row exists in any other state (held, completed, uncertain, conflicting), or
// when another version of the event is leased, uncertain or (AnyVersionSettles) settled; true
// when the lease is c.Owner's. The lock and the claim go in one batch: one round trip, one
// implicit transaction, so the lock is held exactly as long as the claim.
func EffectsClaim(ctx context.Context, q BatchQuerier, c EffectClaim) (bool, error) {
	return claimIn(ctx, q, c, &pgx.Batch{})
}

// effectsClaimOnPool is EffectsClaim in an implicit transaction of its own that does not wait for
// its commit to be flushed (claimWithoutFlush).
func effectsClaimOnPool(ctx context.Context, pool *pgxpool.Pool, c EffectClaim) (bool, error) {
	return claimIn(ctx, pool, c, claimWithoutFlush())
}

// claimIn adds the claim's lock and upsert to b and sends it.
func claimIn(ctx context.Context, q BatchQuerier, c EffectClaim, b *pgx.Batch) (bool, error) {
	b.Queue(effectsClaimLock, c.Key.Consumer, c.Key.EventID)
	takeOverHash, takeOverAlg := c.takeOverFingerprint()
	claim := b.Queue(effectsClaim, c.Key.Consumer, c.Key.EventID, c.Key.EffectVersion, c.RequestHash,
		c.RequestHashAlg, c.Owner, c.Lease.Milliseconds(), nullable(c.JobID), c.AnyVersionSettles, takeOverAlg, takeOverHash)
	var claimed bool
	claim.Exec(func(tag pgconn.CommandTag) error {
		claimed = tag.RowsAffected() == 1
		return nil
	})
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return false, fmt.Errorf("claim the ledger row of %s: %w", c.Key, translate(err))
	}
	return claimed, nil
}

// BatchQuerier runs a pgx batch: *pgxpool.Pool, *pgxpool.Conn and pgx.Tx satisfy it.
type BatchQuerier interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// leasedRow names one row by its primary key in the lease statements below, written so that
// no other index can serve it: "effect_version + 0" keeps the planner off
// (consumer, effect_version, job_id) and stateProcessing off the partial effects_attention_idx.
// With generic plans and a new version without statistics, the planner preferred either, and
// walked every row of the version, or every dead entry of the partial index (each row passes
// through processing), on each statement: a 10,000-target replay slowed from 160 to 70 targets/s.
const leasedRow = "consumer = $1 and event_id = $2 and effect_version + 0 = $3"

const stateProcessing = "state || '' = 'processing'"

const effectsHeartbeat = `
update effects
   set lease_expires_at = now() + $5::bigint * interval '1 millisecond', heartbeat_at = now(), updated_at = now()
 where ` + leasedRow + ` and lease_owner = $4 and ` + stateProcessing

// EffectsHeartbeat extends owner's lease on key to now() + lease. False means the lease is no
// longer owner's (taken over or marked uncertain): the caller must stop working on the event.
func EffectsHeartbeat(ctx context.Context, q Querier, key EffectKey, owner string, lease time.Duration) (bool, error) {
	tag, err := q.Exec(ctx, effectsHeartbeat, key.Consumer, key.EventID, key.EffectVersion, owner, lease.Milliseconds())
	if err != nil {
		return false, fmt.Errorf("extend the lease of %s: %w", key, err)
	}
	return tag.RowsAffected() == 1, nil
}

// A call may only start under a live lease: once it lapsed, another instance may be deciding the
// row's fate, and a call recorded now would turn its take-over into an uncertain row. greatest,
// not + 1: the statement is sent again after a lost answer, and the calls of one handling may
// start concurrently, in any order.
const effectsCallStarted = `
update effects set calls_started = greatest(calls_started, $5), updated_at = now()
 where ` + leasedRow + ` and lease_owner = $4 and ` + stateProcessing + `
   and lease_expires_at > now()`

// EffectsCallStarted records, before an external call is made, that owner is starting call number
// ordinal (from 1) of its handling under its lease on key. It must commit before the call: a crash
// mid-call then leaves calls_started > 0 and the lapsed lease becomes uncertain instead of being
// re-run. False means the lease is not owner's or has lapsed, and the call must not be made. A
// statement that loses its connection is sent again (it is idempotent), so a killed session
// before the second call of a handling does not leave its first call's effect uncertain.
func EffectsCallStarted(ctx context.Context, q Querier, key EffectKey, owner string, ordinal int) (bool, error) {
	var affected bool
	_, err := retryLostConnection(ctx, func() error {
		tag, err := q.Exec(ctx, effectsCallStarted, key.Consumer, key.EventID, key.EffectVersion, owner, ordinal)
		affected = err == nil && tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record an external call starting for %s: %w", key, err)
	}
	return affected, nil
}

// EffectCompletion is the stored outcome of a handled event.
type EffectCompletion struct {
	Key   EffectKey
	Owner string
	// ResultHash is fingerprint.Payload over ResultBody.
	ResultHash string
	ResultBody json.RawMessage
	// OutcomeKind is "business" for a terminal business failure, empty for success.
	OutcomeKind string
	// EffectCount counts the external calls made (not the suppressed ones).
	EffectCount int
	// ExternalRefs is a JSON array of the recorded calls.
	ExternalRefs json.RawMessage
	// LastError is the business error's message; empty for success.
	LastError string
	// WriteForbidden records a write-forbidden replay's completion: its calls were suppressed, so
	// nothing may treat the event as executed.
	WriteForbidden bool
	// ResultRetention and EvidenceRetention set replay_until and evidence_until from now().
	ResultRetention   time.Duration
	EvidenceRetention time.Duration
}

// The body goes to effect_bodies (migration 0033), in the partition of the row's replay_until, so
// prune drops it with its week; the row keeps result_hash.
const effectsComplete = `
with done as (
update effects
   set state = 'completed', result_hash = $5, result_body = null, outcome_kind = $7, effect_count = $8,
       external_refs = $9::jsonb, last_error = $10, lease_owner = null, lease_expires_at = null,
       replay_until = now() + $11::bigint * interval '1 millisecond',
       evidence_until = now() + $12::bigint * interval '1 millisecond', write_forbidden = $13, updated_at = now()
 where ` + leasedRow + ` and lease_owner = $4 and ` + stateProcessing + `
returning consumer, event_id, effect_version, replay_until),
body as (
insert into effect_bodies (consumer, event_id, effect_version, replay_until, body)
select consumer, event_id, effect_version, replay_until, $6::jsonb from done where $6::jsonb is not null
on conflict do nothing)
select count(*) from done`

// EffectsComplete stores c's outcome and releases the lease, if c.Owner still holds it. False
// means it does not (the row was marked uncertain or taken over) and nothing was written.
//
// A statement that loses its connection is sent again. If an earlier attempt was applied before
// its answer was lost, the row already holds this outcome: that is reported as recorded, not as
// a lost lease, because the external calls were made once and their outcome is stored.
func EffectsComplete(ctx context.Context, q Querier, c EffectCompletion) (bool, error) {
	var affected bool
	lost, err := retryLostConnection(ctx, func() error {
		var n int
		err := q.QueryRow(ctx, effectsComplete, c.Key.Consumer, c.Key.EventID, c.Key.EffectVersion, c.Owner,
			c.ResultHash, nullable(string(c.ResultBody)), nullable(c.OutcomeKind), c.EffectCount, effectsRefs(c.ExternalRefs),
			nullable(c.LastError), c.ResultRetention.Milliseconds(), c.EvidenceRetention.Milliseconds(), c.WriteForbidden).Scan(&n)
		affected = err == nil && n == 1
		return err
	})
	if err == nil && lost && !affected {
		affected, err = effectsHolds(ctx, q, c.Key, effectsHoldsCompletion, c.ResultHash, c.EffectCount)
	}
	if err != nil {
		return false, fmt.Errorf("record the outcome of %s: %w", c.Key, err)
	}
	return affected, nil
}

// After a lost answer: is the row in the state the lost statement would have left it in?
const (
	effectsHoldsCompletion = `
select exists (select from effects where ` + leasedRow + ` and state = 'completed' and result_hash = $4 and effect_count = $5)`
	effectsHoldsUncertainty = `
select exists (select from effects where ` + leasedRow + ` and state = 'uncertain' and lease_owner = $4 and effect_count = $5)`
)

func effectsHolds(ctx context.Context, q Querier, key EffectKey, query string, match string, effectCount int) (bool, error) {
	var holds bool
	_, err := retryLostConnection(ctx, func() error {
		return q.QueryRow(ctx, query, key.Consumer, key.EventID, key.EffectVersion, match, effectCount).Scan(&holds)
	})
	if err == nil && holds {
		err = effectsDurable(ctx, q, key)
	}
	return holds, err
}

// effectsDurableBarrier rewrites the row as it is: a write, so its commit waits for the
// synchronous standby like any other (synchronous_commit on).
const effectsDurableBarrier = `update effects set updated_at = updated_at where ` + leasedRow

// effectsDurable makes sure what a read found is on every synchronous standby before anyone
// acts on it. A commit whose answer was lost may have been cut while it waited for the standby
// (a terminated session, a restart): PostgreSQL then keeps it, visible, on the primary alone,
// and a failover loses it. Read back as done, such a completion let the SDK acknowledge a message
// whose outcome the promoted standby never had. A write committed now waits for the standby to
// have the WAL up to its own commit, which comes after the lost one's.
func effectsDurable(ctx context.Context, q Querier, key EffectKey) error {
	_, err := retryLostConnection(ctx, func() error {
		_, err := q.Exec(ctx, effectsDurableBarrier, key.Consumer, key.EventID, key.EffectVersion)
		return err
	})
	if err != nil {
		return fmt.Errorf("make sure the recorded outcome of %s is on the synchronous standby: %w", key, err)
	}
	return nil
}

// EffectUncertainty is what is known of a handling whose external outcome is not.
type EffectUncertainty struct {
	Key          EffectKey
	Owner        string
	EffectCount  int
	ExternalRefs json.RawMessage
	// LastError says which call's outcome is unknown, or why the outcome was not recorded.
	LastError string
}

// lease_owner is kept: it names the instance that made the calls, for whoever reviews the row.
const effectsMarkUncertain = `
update effects
   set state = 'uncertain', effect_count = $5, external_refs = $6::jsonb, last_error = $7,
       lease_expires_at = null, updated_at = now()
 where ` + leasedRow + ` and lease_owner = $4 and ` + stateProcessing

// EffectsMarkUncertain marks the row u.Owner holds uncertain: an external write may have happened
// and must be reviewed by hand, never retried automatically. False means u.Owner no longer holds it.
// A statement that loses its connection is sent again, as in EffectsComplete.
func EffectsMarkUncertain(ctx context.Context, q Querier, u EffectUncertainty) (bool, error) {
	var affected bool
	lost, err := retryLostConnection(ctx, func() error {
		tag, err := q.Exec(ctx, effectsMarkUncertain, u.Key.Consumer, u.Key.EventID, u.Key.EffectVersion, u.Owner,
			u.EffectCount, effectsRefs(u.ExternalRefs), u.LastError)
		affected = err == nil && tag.RowsAffected() == 1
		return err
	})
	if err == nil && lost && !affected {
		affected, err = effectsHolds(ctx, q, u.Key, effectsHoldsUncertainty, u.Owner, u.EffectCount)
	}
	if err != nil {
		return false, fmt.Errorf("mark %s uncertain: %w", u.Key, err)
	}
	return affected, nil
}

const effectsMarkLapsedUncertain = `
update effects
   set state = 'uncertain', updated_at = now(),
       last_error = 'lease of ' || coalesce(lease_owner, 'an unknown owner') || ' lapsed after ' || calls_started ||
                    ' external call(s) started; their outcome is unknown: review by hand'
 where ` + leasedRow + ` and ` + stateProcessing + `
   and (lease_expires_at is null or lease_expires_at <= now()) and calls_started > 0`

// EffectsMarkLapsedUncertain marks key uncertain if its lease lapsed after an external call
// started (the holder crashed or stalled mid-call). False means the row no longer qualifies: its
// holder heartbeated, finished, or someone else decided first.
func EffectsMarkLapsedUncertain(ctx context.Context, q Querier, key EffectKey) (bool, error) {
	tag, err := q.Exec(ctx, effectsMarkLapsedUncertain, key.Consumer, key.EventID, key.EffectVersion)
	if err != nil {
		return false, fmt.Errorf("mark %s uncertain after its lease lapsed: %w", key, err)
	}
	return tag.RowsAffected() == 1, nil
}

const effectsRelease = `
update effects
   set state = 'received', lease_owner = null, lease_expires_at = null, calls_started = 0,
       outcome_kind = 'transient', last_error = $5, updated_at = now()
 where ` + leasedRow + ` and lease_owner = $4 and ` + stateProcessing

// EffectsRelease gives up owner's lease on key after a transient failure in which no external
// call was made, so a redelivery may claim it again. False means owner no longer held it.
// A statement that loses its connection is sent again; if an earlier attempt was applied, the
// answer is false, and the caller's redelivery finds the row released, which is what it wanted.
func EffectsRelease(ctx context.Context, q Querier, key EffectKey, owner, lastError string) (bool, error) {
	var affected bool
	_, err := retryLostConnection(ctx, func() error {
		tag, err := q.Exec(ctx, effectsRelease, key.Consumer, key.EventID, key.EffectVersion, owner, lastError)
		affected = err == nil && tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("release the lease of %s: %w", key, err)
	}
	return affected, nil
}

// effectsRefs stores an absent list as the column's own empty default rather than NULL.
func effectsRefs(refs json.RawMessage) string {
	if len(refs) == 0 {
		return "[]"
	}
	return string(refs)
}
