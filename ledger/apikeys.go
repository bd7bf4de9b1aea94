package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/fingerprint"
)

// apiKeyColumns are the columns scanAPIKey reads, in its order.
const apiKeyColumns = `scope_hash, key_hash, route, client_hash, request_hash, request_hash_alg, state,
       coalesce(resolution, ''), coalesce(response_status, 0), coalesce(response_key_id, ''), response_sealed,
       coalesce(external_ref, ''), coalesce(lease_owner, ''), coalesce(lease_expires_at > now(), false),
       greatest(coalesce(extract(epoch from lease_expires_at - now()) * 1000, 0), 0)::bigint,
       calls_started, attempts, replay_until, evidence_until, coalesce(replay_until > now(), false),
       coalesce(note, ''), created_at, updated_at`

func scanAPIKey(row pgx.CollectableRow) (apikey.Record, error) { return scanAPIKeyAfter(row) }

// scanAPIKeyAfter reads apiKeyColumns after the columns of before (a query's own first columns).
func scanAPIKeyAfter(row interface{ Scan(...any) error }, before ...any) (apikey.Record, error) {
	var r apikey.Record
	var state, resolution string
	var remainingMS int64
	err := row.Scan(append(before, &r.ScopeHash, &r.KeyHash, &r.Route, &r.ClientHash, &r.RequestHash, &r.RequestHashAlg, &state,
		&resolution, &r.ResponseStatus, &r.ResponseKeyID, &r.ResponseSealed, &r.ExternalRef, &r.LeaseOwner,
		&r.LeaseLive, &remainingMS, &r.CallsStarted, &r.Attempts, &r.ReplayUntil, &r.EvidenceUntil, &r.ReplayOpen,
		&r.Note, &r.CreatedAt, &r.UpdatedAt)...)
	r.State, r.Resolution = apikey.State(state), apikey.Resolution(resolution)
	r.LeaseRemaining = time.Duration(remainingMS) * time.Millisecond
	return r, err
}

// apiKeysClaim inserts the record already leased, or takes over one with the same fingerprint
// that nobody can have acted on: received (released before any call), a lease that lapsed
// before any external call started, or reconciled as not happened. The conflict arm re-checks
// under the row lock, so two claimants never both win.
//
// It inserts nothing for a key whose record was compacted ($9 is its api_key_tombstone_key):
// that key was used, and its expired evidence goes to the route's look-up, not to a first run.
// Unless a live record of the key exists (one written since, which the conflict arm judges): a
// key can be compacted, run again as new, and then be claimed as any record. An expired whole
// row is not such a record: between the two halves of its compaction it is both, and it is not
// claimable anyway. That the statement's snapshot may predate a compaction is covered by prune:
// it deletes a whole row only apiKeysCompactedGrace after its compact form committed (apiKeysDropWholeWhere).
const apiKeysClaim = `
insert into api_keys as k (scope_hash, key_hash, route, client_hash, request_hash, request_hash_alg,
                           state, lease_owner, lease_expires_at, heartbeat_at)
select $1, $2, $3, $4, $5, $6, 'processing', $7, now() + $8::bigint * interval '1 millisecond', now()
 where api_key_insertable($9, $1, $2)
on conflict (scope_hash, key_hash) do update
   set state = 'processing', lease_owner = excluded.lease_owner, lease_expires_at = excluded.lease_expires_at,
       heartbeat_at = now(), attempts = k.attempts + 1, calls_started = 0, resolution = null, note = null,
       updated_at = now()
 where k.request_hash_alg = excluded.request_hash_alg and k.request_hash = excluded.request_hash
   and (k.state = 'received'
        or (k.state = 'processing' and k.lease_expires_at <= now() and k.calls_started = 0)
        or (k.state = 'reconciled' and k.resolution = 'not_happened'))`

const apiKeysGet = `select ` + apiKeyColumns + ` from api_keys where scope_hash = $1 and key_hash = $2`

// APIKeysClaim asks for the lease of c and returns the record as it stands after the attempt:
// claimed is true when the lease is c.Owner's. The claim and the read go in one batch, one round
// trip: the read runs after the claim (which waited for any concurrent claim of the same key to
// commit), so it sees the winner's row. The claim does not wait for its WAL flush: nothing acts
// on it before the call-started mark, which waits and flushes it too; a claim lost to a crash
// before that led to nothing, and the caller's retry claims again.
func (s *Store) APIKeysClaim(ctx context.Context, c apikey.Claim) (claimed bool, rec apikey.Record, err error) {
	got, err := s.apiClaims.do(ctx, c)
	if err != nil {
		return false, apikey.Record{}, fmt.Errorf("claim the API record of route %s: %w", c.Route, err)
	}
	return got.claimed, got.rec, nil
}

// apiKeysClaimOrRead is apiKeysClaim that also answers with the record it could not claim, in one
// statement: a claimed row returns only its claimed flag; an unclaimed one returns the record as
// the statement's snapshot sees it. A record another transaction committed after that snapshot
// (the upsert waited for it), or a key only a compact tombstone is left of, is not seen: no row
// comes back, and queueClaim's caller reads it with apiKeysGetOn.
const apiKeysClaimOrRead = `
with claimed as (` + apiKeysClaim + `
returning 1)
select true, ` + apiKeyColumns + ` from api_keys where false
 union all
select false, ` + apiKeyColumns + `
  from api_keys
 where scope_hash = $1 and key_hash = $2 and not exists (select 1 from claimed)
 union all
select true, '', '', '', '', '', '', '', '', 0, '', null, '', '', false, 0::bigint, 0, 0, null, null, false, '', now(), now()
 where exists (select 1 from claimed)`

// apiKeysCompactGet reads what is left of a key whose record was compacted away: an expired
// record with the compact flag, without fingerprint or reference, dated by its tombstone's day
// (the latest, when the key was compacted more than once).
const apiKeysCompactGet = `
select $2::text, $3::text, t.evidence_until::timestamp at time zone 'UTC'
  from api_key_tombstones t where t.key = $1 order by t.evidence_until desc limit 1`

// queueClaim queues c's claim, which answers with the record when it loses; got receives the
// answer. In one batch, a second claim of the same record sees the first's row and loses to its
// live lease.
func queueClaim(b *pgx.Batch, c apikey.Claim, got func(apiClaimed)) {
	b.Queue(apiKeysClaimOrRead, c.ScopeHash, c.KeyHash, c.Route, c.ClientHash, c.RequestHash, c.RequestHashAlg,
		c.Owner, c.Lease.Milliseconds(), apiKeyTombstoneKey(c.ScopeHash, c.KeyHash)).Query(func(rows pgx.Rows) error {
		var out apiClaimed
		for rows.Next() {
			var claimed bool
			rec, err := scanAPIKeyAfter(rows, &claimed)
			if err != nil {
				return err
			}
			out = apiClaimed{claimed: claimed, rec: rec, found: !claimed}
		}
		got(out)
		return rows.Err()
	})
}

// apiKeysGetOn reads one record on conn, or what its compact tombstone says of it (Compact); a
// zero record when there is neither. One round trip: both reads go in one batch.
func apiKeysGetOn(ctx context.Context, conn batchSender, k apikey.Key) (apikey.Record, error) {
	var rec, compact apikey.Record
	b := &pgx.Batch{}
	b.Queue(apiKeysGet, k.ScopeHash, k.KeyHash).Query(func(rows pgx.Rows) error {
		recs, err := pgx.CollectRows(rows, scanAPIKey)
		if err == nil && len(recs) == 1 {
			rec = recs[0]
		}
		return err
	})
	b.Queue(apiKeysCompactGet, apiKeyTombstoneKey(k.ScopeHash, k.KeyHash), k.ScopeHash, k.KeyHash).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var day time.Time
			if err := rows.Scan(&compact.ScopeHash, &compact.KeyHash, &day); err != nil {
				return err
			}
			compact.State, compact.Compact = apikey.StateExpired, true
			compact.RequestHash, compact.RequestHashAlg = fingerprint.NoneHash, fingerprint.AlgorithmNone
			compact.EvidenceUntil, compact.CreatedAt, compact.UpdatedAt = &day, day, day
		}
		return rows.Err()
	})
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return apikey.Record{}, fmt.Errorf("read an API record: %w", err)
	}
	if rec.ScopeHash == "" && compact.Compact {
		return compact, nil
	}
	return rec, nil
}

const apiKeysOfKey = `select ` + apiKeyColumns + ` from api_keys where key_hash = $1 and ($2 = '' or route = $2) order by route, scope_hash`

// APIKeysOfKey returns every record of keyHash, under any scope; route, when not empty, keeps
// that route's only.
func (s *Store) APIKeysOfKey(ctx context.Context, keyHash, route string) ([]apikey.Record, error) {
	rows, err := s.pool.Query(ctx, apiKeysOfKey, keyHash, route)
	if err != nil {
		return nil, fmt.Errorf("read the API records of a key: %w", err)
	}
	recs, err := pgx.CollectRows(rows, scanAPIKey)
	if err != nil {
		return nil, fmt.Errorf("read the API records of a key: %w", err)
	}
	return recs, nil
}

// apiKeysTakeOver restarts a record whose replay window closed, for a request that runs as new:
// on a reversible route that declared it, or after the look-up said the call never happened. It
// holds only while the record is still as the caller read it (updated_at), so one retry wins.
const apiKeysTakeOver = `
update api_keys
   set state = 'processing', lease_owner = $3, lease_expires_at = now() + $4::bigint * interval '1 millisecond',
       heartbeat_at = now(), request_hash = $5, request_hash_alg = $6, response_status = null,
       response_key_id = null, response_sealed = null, external_ref = null, replay_until = null,
       evidence_until = null, resolution = null, note = null, calls_started = 0,
       attempts = attempts + 1, updated_at = now()
 where scope_hash = $1 and key_hash = $2 and updated_at = $7
   and (state in ('completed', 'expired') or (state = 'reconciled' and resolution = 'not_happened'))
   and (replay_until is null or replay_until <= now())`

// APIKeysTakeOver leases a record whose replay window closed to c.Owner, with c's fingerprint,
// if it still is as read at seen (its UpdatedAt). False when another request got there first.
func (s *Store) APIKeysTakeOver(ctx context.Context, c apikey.Claim, seen time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, apiKeysTakeOver, c.ScopeHash, c.KeyHash, c.Owner, c.Lease.Milliseconds(),
		c.RequestHash, c.RequestHashAlg, seen)
	if err != nil {
		return false, fmt.Errorf("restart the API record of route %s: %w", c.Route, err)
	}
	return tag.RowsAffected() == 1, nil
}

// apiKeysStartOverCompacted inserts the leased record of a key only a compact tombstone is left
// of (its look-up said the call never happened, or its route takes an expired key as new). The
// insert is the arbiter: of two requests that met the compact tombstone, one inserts.
const apiKeysStartOverCompacted = `
insert into api_keys (scope_hash, key_hash, route, client_hash, request_hash, request_hash_alg,
                      state, lease_owner, lease_expires_at, heartbeat_at)
values ($1, $2, $3, $4, $5, $6, 'processing', $7, now() + $8::bigint * interval '1 millisecond', now())
on conflict (scope_hash, key_hash) do nothing`

// apiKeysReviewCompacted writes the uncertain record of a key only a compact tombstone is left of,
// whose look-up could not tell: later requests with the key meet it and wait for a person. It
// carries the request that asked (its fingerprint), since the first one's is gone.
const apiKeysReviewCompacted = `
insert into api_keys (scope_hash, key_hash, route, client_hash, request_hash, request_hash_alg, state, note)
values ($1, $2, $3, $4, $5, $6, 'uncertain', nullif($7, ''))
on conflict (scope_hash, key_hash) do nothing`

// APIKeysStartOverCompacted leases, to c.Owner, a new record of a key only a compact tombstone is
// left of; false when another request with the key got there first.
func (s *Store) APIKeysStartOverCompacted(ctx context.Context, c apikey.Claim) (bool, error) {
	tag, err := s.pool.Exec(ctx, apiKeysStartOverCompacted, c.ScopeHash, c.KeyHash, c.Route, c.ClientHash,
		c.RequestHash, c.RequestHashAlg, c.Owner, c.Lease.Milliseconds())
	if err != nil {
		return false, fmt.Errorf("start over the compacted API record of route %s: %w", c.Route, err)
	}
	return tag.RowsAffected() == 1, nil
}

// APIKeysReviewCompacted sends a key only a compact tombstone is left of to manual review
// (uncertain), with c's fingerprint, after a look-up that could not tell; false when a record of
// the key was written first.
func (s *Store) APIKeysReviewCompacted(ctx context.Context, c apikey.Claim, note string) (bool, error) {
	tag, err := s.pool.Exec(ctx, apiKeysReviewCompacted, c.ScopeHash, c.KeyHash, c.Route, c.ClientHash,
		c.RequestHash, c.RequestHashAlg, note)
	if err != nil {
		return false, fmt.Errorf("send the compacted API record of route %s to review: %w", c.Route, err)
	}
	return tag.RowsAffected() == 1, nil
}

const (
	apiKeysCallStarted = `
update api_keys set calls_started = calls_started + 1, updated_at = now()
 where scope_hash = $1 and key_hash = $2 and state = 'processing' and lease_owner = $3 and lease_expires_at > now()`
	apiKeysHeartbeat = `
update api_keys set lease_expires_at = now() + $4::bigint * interval '1 millisecond', heartbeat_at = now()
 where scope_hash = $1 and key_hash = $2 and state = 'processing' and lease_owner = $3 and lease_expires_at > now()`
	// A completion holds even after the lease lapsed: nobody may take over a record whose call
	// started, so the owner is still the only one who knows how it ended.
	apiKeysComplete = `
update api_keys
   set state = 'completed', response_status = $4, response_key_id = nullif($5, ''), response_sealed = $6,
       external_ref = nullif($7, ''), replay_until = now() + $8::bigint * interval '1 millisecond',
       evidence_until = now() + $9::bigint * interval '1 millisecond', lease_owner = null,
       lease_expires_at = null, updated_at = now()
 where scope_hash = $1 and key_hash = $2 and state = 'processing' and lease_owner = $3`
	apiKeysRelease = `
update api_keys set state = 'received', lease_owner = null, lease_expires_at = null, calls_started = 0, updated_at = now()
 where scope_hash = $1 and key_hash = $2 and state = 'processing' and lease_owner = $3`
	// An uncertain record keeps its last lease owner (with no lease): only that owner can still
	// learn how the call ended (APIKeysCompleteLate).
	apiKeysMarkUncertain = `
update api_keys set state = 'uncertain', lease_expires_at = null, note = nullif($4, ''), updated_at = now()
 where scope_hash = $1 and key_hash = $2 and state = 'processing' and lease_owner = $3`
	apiKeysMarkLapsedUncertain = `
update api_keys set state = 'uncertain', lease_expires_at = null,
       note = 'the lease lapsed after an external call started', updated_at = now()
 where scope_hash = $1 and key_hash = $2 and state = 'processing' and lease_expires_at <= now() and calls_started > 0`
	// An expired record whose look-up could not tell goes to a person, with its evidence kept.
	apiKeysMarkReview = `
update api_keys set state = 'uncertain', note = nullif($3, ''), updated_at = now()
 where scope_hash = $1 and key_hash = $2 and updated_at = $4 and state in ('completed', 'expired', 'reconciled')`
)

// APIKeysCallStarted records, before it is made, that the owner starts an external call: from
// here on doubt means uncertain. False when the lease is not the owner's any more: make no call.
func (s *Store) APIKeysCallStarted(ctx context.Context, k apikey.Key, owner string) (bool, error) {
	return s.apiWrites.do(ctx, apiWrite{mark: &apiCallMark{key: k, owner: owner}})
}

// APIKeysHeartbeat renews the owner's lease; false when it lapsed or was taken.
func (s *Store) APIKeysHeartbeat(ctx context.Context, k apikey.Key, owner string, lease time.Duration) (bool, error) {
	return s.apiKeysUpdate(ctx, "renew the lease of", apiKeysHeartbeat, k.ScopeHash, k.KeyHash, owner, lease.Milliseconds())
}

// APIKeysComplete stores the sealed response and the windows; false when the record is not the
// owner's processing record any more.
//
// The completion does not wait for its WAL flush: the call-started mark before it did, so a
// completion lost to the database's crash leaves a record whose call started and whose lease
// lapses, which becomes uncertain and is settled by the look-up (the caller already has its
// response); nothing runs twice. What it saves is a flush per request (docs/decisions.md).
func (s *Store) APIKeysComplete(ctx context.Context, c apikey.Completion) (bool, error) {
	return s.apiWrites.do(ctx, apiWrite{completion: &c})
}

// APIKeysRelease gives the record back as received: the request failed before any external call
// took effect, and a retry with the same fingerprint runs it.
func (s *Store) APIKeysRelease(ctx context.Context, k apikey.Key, owner string) (bool, error) {
	return s.apiKeysUpdate(ctx, "release", apiKeysRelease, k.ScopeHash, k.KeyHash, owner)
}

// APIKeysMarkUncertain records that the owner's request may have made its external call without
// knowing how it ended: never run again automatically.
func (s *Store) APIKeysMarkUncertain(ctx context.Context, k apikey.Key, owner, note string) (bool, error) {
	return s.apiKeysUpdate(ctx, "mark uncertain", apiKeysMarkUncertain, k.ScopeHash, k.KeyHash, owner, note)
}

// APIKeysMarkLapsedUncertain turns a processing record whose lease lapsed after a call started
// into uncertain (its owner died or stalled).
func (s *Store) APIKeysMarkLapsedUncertain(ctx context.Context, k apikey.Key) (bool, error) {
	return s.apiKeysUpdate(ctx, "mark uncertain", apiKeysMarkLapsedUncertain, k.ScopeHash, k.KeyHash)
}

// APIKeysMarkReview sends a record whose replay window closed to manual review (uncertain) after
// a look-up that could not tell, if it is still as read at seen.
func (s *Store) APIKeysMarkReview(ctx context.Context, k apikey.Key, note string, seen time.Time) (bool, error) {
	return s.apiKeysUpdate(ctx, "send to review", apiKeysMarkReview, k.ScopeHash, k.KeyHash, note, seen)
}

func (s *Store) apiKeysUpdate(ctx context.Context, what, query string, args ...any) (bool, error) {
	tag, err := s.pool.Exec(ctx, query, args...)
	if err != nil {
		return false, fmt.Errorf("%s an API record: %w", what, err)
	}
	return tag.RowsAffected() == 1, nil
}

const apiKeysAge = `
update api_keys
   set created_at = created_at - $3::bigint * interval '1 millisecond',
       replay_until = replay_until - $3::bigint * interval '1 millisecond',
       evidence_until = evidence_until - $3::bigint * interval '1 millisecond'
 where scope_hash = $1 and key_hash = $2`

// APIKeysAge moves a record's dates back by age, as if it had completed that long ago: `replayctl
// demo` shows an expired key's look-up with it instead of waiting for the replay window.
func (s *Store) APIKeysAge(ctx context.Context, k apikey.Key, age time.Duration) (bool, error) {
	return s.apiKeysUpdate(ctx, "age", apiKeysAge, k.ScopeHash, k.KeyHash, age.Milliseconds())
}
