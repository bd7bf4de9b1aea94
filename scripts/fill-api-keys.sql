-- Fills the API records of the schema first on the search_path with :n expired tombstones of one
-- route (docs/benchmarks.md, "Compact API tombstones"): hashes of the middleware's width, evidence
-- ended over the last 60 days. Run: psql -v n=1000000 "postgres:///test?options=-csearch_path%3Dscale_api" -f scripts/fill-api-keys.sql
\set ON_ERROR_STOP on
insert into api_keys (scope_hash, key_hash, route, client_hash, request_hash, request_hash_alg, state,
                      response_status, external_ref, replay_until, evidence_until, created_at, updated_at)
select md5('s' || i) || md5('t' || i), md5('k' || i) || md5('l' || i), 'POST /v1/charges',
       md5('c' || (i % 1000)) || md5('d' || (i % 1000)), md5('r' || i) || md5('q' || i), 'canonical-json-v1', 'expired',
       null, null, now() - interval '90 days',
       now() - (i % 60) * interval '1 day' - interval '1 hour', now() - interval '100 days', now() - interval '2 days'
  from generate_series(1, :n) as i;
vacuum analyze api_keys;
