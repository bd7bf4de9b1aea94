package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The batched forms of effectsCallStarted, effectsHeartbeat and effectsComplete: the same
// guards, over rows given as parallel arrays, each updated row returning its request's
// position. Keys in one batch are distinct (groupCommit ensures it), so a row answers exactly
// one request; a request whose row is not returned lost its lease, as RowsAffected 0 says in
// the single-row statements. "effect_version + 0" and "state || ”" keep the planner on the
// primary key, as leasedRow explains.
const batchedRow = `e.consumer = r.consumer and e.event_id = r.event_id and e.effect_version + 0 = r.effect_version
   and e.lease_owner = r.owner and e.state || '' = 'processing'`

const effectsCallStartedBatch = `
update effects e set calls_started = greatest(e.calls_started, r.ordinal), updated_at = now()
  from unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::int[])
       with ordinality as r(consumer, event_id, effect_version, owner, ordinal, i)
 where ` + batchedRow + ` and e.lease_expires_at > now()
returning r.i`

const effectsHeartbeatBatch = `
update effects e
   set lease_expires_at = now() + r.lease_ms * interval '1 millisecond', heartbeat_at = now(), updated_at = now()
  from unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::bigint[])
       with ordinality as r(consumer, event_id, effect_version, owner, lease_ms, i)
 where ` + batchedRow + `
returning r.i`

const effectsCompleteBatch = `
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
 where ` + batchedRow + `
returning r.i, e.consumer, e.event_id, e.effect_version, e.replay_until, r.result_body),
body as (
insert into effect_bodies (consumer, event_id, effect_version, replay_until, body)
select consumer, event_id, effect_version, replay_until, result_body::jsonb from done where result_body is not null
on conflict do nothing)
select i from done`

// keyArrays are the key columns of a batch, in request order.
type keyArrays struct {
	consumers, eventIDs []string
	versions            []int32
}

func keysOf[T any](reqs []*groupRequest[T]) keyArrays {
	k := keyArrays{consumers: make([]string, len(reqs)), eventIDs: make([]string, len(reqs)), versions: make([]int32, len(reqs))}
	for i, r := range reqs {
		k.consumers[i], k.eventIDs[i], k.versions[i] = r.key.Consumer, r.key.EventID, int32(r.key.EffectVersion)
	}
	return k
}

// batchRefused marks a batch statement the server refused as a whole, with no attempt that lost
// its connection: nothing of it was applied, so its requests may be run again one at a time.
type batchRefused struct{ err error }

func (e batchRefused) Error() string { return e.err.Error() }
func (e batchRefused) Unwrap() error { return e.err }

// refusedOrNot wraps err as batchRefused when the server answered it and no attempt was lost.
func refusedOrNot(err error, lost bool) error {
	if _, answered := errors.AsType[*pgconn.PgError](err); answered && !lost && !ConnectionLost(err) {
		return batchRefused{err}
	}
	return err
}

// updated runs a batched update and says which requests' rows it updated.
func updated(ctx context.Context, q Querier, n int, sql string, args ...any) ([]bool, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	positions, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	oks := make([]bool, n)
	for _, p := range positions {
		if p < 1 || int(p) > n {
			return nil, fmt.Errorf("batched update returned position %d of %d", p, n)
		}
		oks[p-1] = true
	}
	return oks, nil
}

// sendCallStarted is idempotent like EffectsCallStarted (greatest), so a lost connection sends
// the whole batch again.
func (g *groupCommit) sendCallStarted(ctx context.Context, reqs []*groupRequest[callStartedArg]) ([]bool, error) {
	k := keysOf(reqs)
	owners, ordinals := make([]string, len(reqs)), make([]int32, len(reqs))
	for i, r := range reqs {
		owners[i], ordinals[i] = r.arg.owner, int32(r.arg.ordinal)
	}
	var oks []bool
	lost, err := retryLostConnection(ctx, func() (err error) {
		oks, err = updated(ctx, g.pool, len(reqs), effectsCallStartedBatch, k.consumers, k.eventIDs, k.versions, owners, ordinals)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("record %d external calls starting: %w", len(reqs), refusedOrNot(err, lost))
	}
	return oks, nil
}

// sendHeartbeat is not sent again after a lost connection, as EffectsHeartbeat is not: the next
// heartbeat is.
func (g *groupCommit) sendHeartbeat(ctx context.Context, reqs []*groupRequest[heartbeatArg]) ([]bool, error) {
	k := keysOf(reqs)
	owners, leases := make([]string, len(reqs)), make([]int64, len(reqs))
	for i, r := range reqs {
		owners[i], leases[i] = r.arg.owner, r.arg.lease.Milliseconds()
	}
	oks, err := updated(ctx, g.pool, len(reqs), effectsHeartbeatBatch, k.consumers, k.eventIDs, k.versions, owners, leases)
	if err != nil {
		return nil, fmt.Errorf("extend %d leases: %w", len(reqs), refusedOrNot(err, false))
	}
	return oks, nil
}

// sendComplete sends the batch again after a lost connection, and then asks for each row it did
// not update whether an earlier attempt already stored that outcome, as EffectsComplete does.
func (g *groupCommit) sendComplete(ctx context.Context, reqs []*groupRequest[EffectCompletion]) ([]bool, error) {
	k := keysOf(reqs)
	n := len(reqs)
	owners, hashes, bodies, kinds := make([]string, n), make([]string, n), make([]*string, n), make([]*string, n)
	counts, refs, lastErrors := make([]int32, n), make([]string, n), make([]*string, n)
	resultMS, evidenceMS, forbidden := make([]int64, n), make([]int64, n), make([]bool, n)
	for i, r := range reqs {
		c := r.arg
		owners[i], hashes[i], counts[i], refs[i] = c.Owner, c.ResultHash, int32(c.EffectCount), effectsRefs(c.ExternalRefs)
		bodies[i], kinds[i], lastErrors[i] = nullableText(string(c.ResultBody)), nullableText(c.OutcomeKind), nullableText(c.LastError)
		resultMS[i], evidenceMS[i], forbidden[i] = c.ResultRetention.Milliseconds(), c.EvidenceRetention.Milliseconds(), c.WriteForbidden
	}
	var oks []bool
	lost, err := retryLostConnection(ctx, func() (err error) {
		oks, err = updated(ctx, g.pool, n, effectsCompleteBatch, k.consumers, k.eventIDs, k.versions, owners, hashes,
			bodies, kinds, counts, refs, lastErrors, resultMS, evidenceMS, forbidden)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("record the outcomes of %d events: %w", n, refusedOrNot(err, lost))
	}
	if lost {
		for i, r := range reqs {
			if oks[i] {
				continue
			}
			oks[i], err = effectsHolds(ctx, g.pool, r.key, effectsHoldsCompletion, r.arg.ResultHash, r.arg.EffectCount)
			if err != nil {
				return nil, fmt.Errorf("record the outcome of %s: %w", r.key, err)
			}
		}
	}
	return oks, nil
}

// nullableText is nullable for an array element.
func nullableText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
