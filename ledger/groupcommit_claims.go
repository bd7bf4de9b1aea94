package ledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// effectsClaimLockBatch takes effectsClaimLock's lock for every event of a batch, in the order of
// the lock IDs themselves: two claim batches, of this instance or another, then wait for each
// other at most in one direction and never deadlock. A single claim takes one lock and cannot
// close a cycle.
const effectsClaimLockBatch = `
select count(*) from (
  select pg_advisory_xact_lock(l.id)
    from (select hashtextextended(current_schema() || ':replayctl.effect.' || u.consumer || chr(31) || u.event_id, 0) as id
            from unnest($1::text[], $2::text[]) as u(consumer, event_id)
           order by 1) as l) as locked`

// effectsClaimBatch is effectsClaim over rows given as arrays, run after effectsClaimLockBatch in
// the same transaction. An upsert cannot read the take-over fingerprint in its conflict arm
// (only the table's own columns are in excluded), so the take-over is an update and the new rows
// an insert, both from one snapshot: a row that exists is only ever updated, and a key with no
// row only inserted. The update re-checks its conditions on the latest row version as the
// conflict arm did. A batch holds at most one claim per event (groupCommit ensures it), so the
// not-exists over other versions cannot miss a claim of its own batch. "effect_version + 0" keeps
// the insert's look-up on the primary key, as leasedRow explains: with a generic plan the planner
// chose (consumer, effect_version, job_id) and walked every row of the version for each claim, so
// claims slowed as the replay went (live runs of 10,000 events: 0.1-0.75 s a batch, the whole
// consumer at ~330 events/s whatever the handlers; docs/benchmarks.md).
const effectsClaimBatch = `
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

// sendClaim runs a batch of claims of distinct events as one transaction (claimWithoutFlush): the
// locks, then the claims. It is not sent again after a lost connection, as EffectsClaim is not: the SDK retries
// the message, whose redelivery reads the rows again.
func (g *groupCommit) sendClaim(ctx context.Context, reqs []*groupRequest[EffectClaim]) ([]bool, error) {
	k := keysOf(reqs)
	n := len(reqs)
	hashes, algs, owners, leases := make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
	jobs, anyVersion, takeAlgs, takeHashes := make([]*string, n), make([]bool, n), make([]string, n), make([]string, n)
	for i, r := range reqs {
		c := r.arg
		hashes[i], algs[i], owners[i], leases[i] = c.RequestHash, c.RequestHashAlg, c.Owner, c.Lease.Milliseconds()
		jobs[i], anyVersion[i] = nullableText(c.JobID), c.AnyVersionSettles
		takeHashes[i], takeAlgs[i] = c.takeOverFingerprint()
	}
	b := claimWithoutFlush()
	b.Queue(effectsClaimLockBatch, k.consumers, k.eventIDs)
	// Rows come back by event: a batch holds one claim per event.
	type event struct{ consumer, id string }
	position := make(map[event]int, n)
	for i, r := range reqs {
		position[event{r.key.Consumer, r.key.EventID}] = i
	}
	oks := make([]bool, n)
	var bad error
	b.Queue(effectsClaimBatch, k.consumers, k.eventIDs, k.versions, hashes, algs, owners, leases, jobs, anyVersion,
		takeAlgs, takeHashes).Query(func(rows pgx.Rows) error {
		var e event
		_, err := pgx.ForEachRow(rows, []any{&e.consumer, &e.id}, func() error {
			i, ok := position[e]
			if !ok {
				bad = fmt.Errorf("batched claim returned event %q of consumer %s, not in its batch", e.id, e.consumer)
				return bad
			}
			oks[i] = true
			return nil
		})
		return err
	})
	if err := g.pool.SendBatch(ctx, b).Close(); err != nil {
		if bad != nil {
			return nil, bad
		}
		return nil, fmt.Errorf("claim %d ledger rows: %w", n, refusedOrNot(translate(err), false))
	}
	return oks, nil
}
