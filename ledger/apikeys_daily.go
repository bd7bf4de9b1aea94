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
	Route     string
	Records   int64
	Uncertain int64
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

// APIKeysAttention counts every route's records, its uncertain ones and its lapsed leases.
func (s *Store) APIKeysAttention(ctx context.Context, route string) ([]APIKeyAttention, error) {
	rows, err := s.pool.Query(ctx, apiKeysAttention, route)
	if err != nil {
		return nil, fmt.Errorf("count the API records: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (APIKeyAttention, error) {
		var a APIKeyAttention
		err := row.Scan(&a.Route, &a.Records, &a.Uncertain, &a.LapsedLeases, &a.OldestUncertain)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("count the API records: %w", err)
	}
	return out, nil
}
