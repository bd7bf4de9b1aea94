package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/apikey"
)

const apiKeyDailyAdd = `
insert into api_key_daily as d (route, client_hash, day, requests, replays, in_progress, mismatches, uncertain)
select * from unnest($1::text[], $2::text[], $3::date[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[])
on conflict (route, day, client_hash) do update
   set requests = d.requests + excluded.requests, replays = d.replays + excluded.replays,
       in_progress = d.in_progress + excluded.in_progress, mismatches = d.mismatches + excluded.mismatches,
       uncertain = d.uncertain + excluded.uncertain`

// APIKeyDailyAdd adds the middleware's counts to the day's totals in one statement. Each
// (route, client, day) must appear once in counts.
func (s *Store) APIKeyDailyAdd(ctx context.Context, counts []apikey.DailyCount) error {
	if len(counts) == 0 {
		return nil
	}
	n := len(counts)
	routes, clients, days := make([]string, n), make([]string, n), make([]time.Time, n)
	req, rep, inp, mis, unc := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, c := range counts {
		routes[i], clients[i], days[i] = c.Route, c.ClientHash, c.Day
		req[i], rep[i], inp[i], mis[i], unc[i] = c.Requests, c.Replays, c.InProgress, c.Mismatches, c.Uncertain
	}
	if _, err := s.pool.Exec(ctx, apiKeyDailyAdd, routes, clients, days, req, rep, inp, mis, unc); err != nil {
		return fmt.Errorf("add the API key counts: %w", err)
	}
	return nil
}

const apiKeyDailySince = `
select route, client_hash, day, requests, replays, in_progress, mismatches, uncertain
  from api_key_daily
 where day >= $1::date and ($2 = '' or route = $2)
 order by route, day, client_hash`

// APIKeyDailySince returns the daily counts from since's day on, of route (empty: every route).
func (s *Store) APIKeyDailySince(ctx context.Context, since time.Time, route string) ([]apikey.DailyCount, error) {
	rows, err := s.pool.Query(ctx, apiKeyDailySince, since, route)
	if err != nil {
		return nil, fmt.Errorf("read the API key counts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (apikey.DailyCount, error) {
		var c apikey.DailyCount
		err := row.Scan(&c.Route, &c.ClientHash, &c.Day, &c.Requests, &c.Replays, &c.InProgress, &c.Mismatches, &c.Uncertain)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the API key counts: %w", err)
	}
	return out, nil
}

// APIKeyAttention is what stands out of a route's records now.
type APIKeyAttention struct {
	Route   string
	Records int64
	// RecordsEstimated says Records is PostgreSQL's estimate (the table's row estimate times the
	// route's share in its statistics), not a count: past apiKeysCountedUpTo records a count
	// would read the whole table.
	RecordsEstimated bool
	Uncertain        int64
	// LapsedLeases are processing records whose lease lapsed after a call started.
	LapsedLeases int64
	// OldestUncertain is when the oldest uncertain record last changed; nil with none.
	OldestUncertain *time.Time
}

const apiKeysAttention = `
select route, count(*),
       count(*) filter (where state = 'uncertain'),
       count(*) filter (where state = 'processing' and lease_expires_at <= now() and calls_started > 0),
       min(updated_at) filter (where state = 'uncertain')
  from api_keys
 where ($1 = '' or route = $1)
 group by route
 order by route`

// apiKeysCountedUpTo is the most records APIKeysAttention counts exactly: a count reads every
// record (0.53 s at a million here), so past it the records are estimated.
const apiKeysCountedUpTo = 100_000

const apiKeysRowEstimate = `select greatest(reltuples, 0)::bigint from pg_class where oid = 'api_keys'::regclass`

// apiKeysAttentionEstimated reads the records that need attention through the partial index of
// processing and uncertain ones, and estimates each route's records from the table's row estimate
// ($2) and the route's share in the statistics: its most-common-value frequency, or the rest
// shared evenly among the other distinct routes. A route with neither records to look at nor a
// share in the statistics is not listed (keys stats lists it from its daily counts).
const apiKeysAttentionEstimated = `
with stats as (
    select coalesce(s.most_common_vals::text::text[], '{}') as vals, coalesce(s.most_common_freqs, '{}') as freqs,
           case when s.n_distinct < 0 then -s.n_distinct * $2 else s.n_distinct end as distinct_routes
      from pg_stats s
     where s.schemaname = current_schema() and s.tablename = 'api_keys' and s.attname = 'route'),
share as (
    select u.route, u.freq from stats, unnest(stats.vals, stats.freqs) as u(route, freq)),
rest as (
    select (1 - coalesce((select sum(freq) from share), 0))
           / greatest(coalesce((select distinct_routes from stats), 1) - (select count(*) from share), 1) as freq),
attention as (
    select route,
           count(*) filter (where state = 'uncertain') as uncertain,
           count(*) filter (where state = 'processing' and lease_expires_at <= now() and calls_started > 0) as lapsed,
           min(updated_at) filter (where state = 'uncertain') as oldest
      from api_keys
     where state in ('processing', 'uncertain') and ($1 = '' or route = $1)
     group by route)
select r.route, round($2 * coalesce(sh.freq, (select freq from rest)))::bigint,
       coalesce(a.uncertain, 0), coalesce(a.lapsed, 0), a.oldest
  from (select route from attention
        union select route from share where $1 = '' or route = $1
        union select $1 where $1 <> '') r
  left join attention a using (route)
  left join share sh using (route)
 order by r.route`

// APIKeysAttention counts every route's records, its uncertain ones and its lapsed leases; past
// apiKeysCountedUpTo records, the records are PostgreSQL's estimate and the rest is read from
// the partial index of records awaiting an outcome, so its cost follows them, not the table.
func (s *Store) APIKeysAttention(ctx context.Context, route string) ([]APIKeyAttention, error) {
	var estimate int64
	if err := s.pool.QueryRow(ctx, apiKeysRowEstimate).Scan(&estimate); err != nil {
		return nil, fmt.Errorf("count the API records: %w", err)
	}
	query, args := apiKeysAttention, []any{route}
	if estimate > apiKeysCountedUpTo {
		query, args = apiKeysAttentionEstimated, []any{route, estimate}
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("count the API records: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (APIKeyAttention, error) {
		a := APIKeyAttention{RecordsEstimated: estimate > apiKeysCountedUpTo}
		err := row.Scan(&a.Route, &a.Records, &a.Uncertain, &a.LapsedLeases, &a.OldestUncertain)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("count the API records: %w", err)
	}
	return out, nil
}
