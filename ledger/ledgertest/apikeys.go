package ledgertest

import (
	"context"
	"testing"
	"time"

	"github.com/replayctl/replayctl/apikey"
)

// EndKeyWindows dates the replay and evidence windows of the API records in states (every record
// when none are named) back: they ended replayAgo and evidenceAgo ago. A zero duration leaves
// that window alone.
func EndKeyWindows(t testing.TB, db Execer, replayAgo, evidenceAgo time.Duration, states ...string) {
	t.Helper()
	update(t, db, "EndKeyWindows", "api_keys", "state", endWindows,
		states, replayAgo.Milliseconds(), evidenceAgo.Milliseconds())
}

// MakeKeyTombstones turns the API records in states (every record when none are named) into
// tombstones, as keys prune does when their replay window ends: state expired, no stored
// response.
func MakeKeyTombstones(t testing.TB, db Execer, states ...string) {
	t.Helper()
	update(t, db, "MakeKeyTombstones", "api_keys", "state", `state = 'expired', response_sealed = null`, states)
}

// LapseKeyLeases makes the leases of the API records in processing lapse a second ago, as if
// their instance died.
func LapseKeyLeases(t testing.TB, db Execer) {
	t.Helper()
	update(t, db, "LapseKeyLeases", "api_keys", "state", `lease_expires_at = now() - interval '1 second'`, []string{"processing"})
}

// BackdateKeyChanges moves the last change of the API records in states (every record when none
// are named) ago into the past: a compacted tombstone's mark then looks as old as keys prune's
// grace before it deletes the whole row.
func BackdateKeyChanges(t testing.TB, db Execer, ago time.Duration, states ...string) {
	t.Helper()
	update(t, db, "BackdateKeyChanges", "api_keys", "state", `updated_at = updated_at - make_interval(secs => $2 / 1000.0)`,
		states, ago.Milliseconds())
}

// APIKey is one api_keys record; a zero field takes the default its comment names.
type APIKey struct {
	Route     string // "POST /v1/charges"
	ScopeHash string // apikey.ScopeHash("t", "p", Route)
	KeyHash   string // required: apikey.HashKey(secret, key)
	// ClientHash names the caller: apikey.ClientHash("t", "p").
	ClientHash     string
	RequestHash    string // "sha256:" + KeyHash
	RequestHashAlg string // "sha256-canon-v2"
	State          string // "processing"
	CallsStarted   int
	ExternalRef    string
	// LeaseLapsedAgo > 0 makes a processing record's lease one that lapsed that long ago; a
	// processing record's lease is otherwise live for a minute.
	LeaseLapsedAgo time.Duration
	// UpdatedAgo dates the record's last change back.
	UpdatedAgo time.Duration
}

// Defaults returns k with its defaults filled in, as InsertAPIKeys stores it.
func (k APIKey) Defaults() APIKey {
	k.Route = or(k.Route, "POST /v1/charges")
	k.ScopeHash = or(k.ScopeHash, apikey.ScopeHash("t", "p", k.Route))
	k.ClientHash = or(k.ClientHash, apikey.ClientHash("t", "p"))
	k.RequestHash, k.RequestHashAlg = or(k.RequestHash, "sha256:"+k.KeyHash), or(k.RequestHashAlg, "sha256-canon-v2")
	k.State = or(k.State, string(apikey.StateProcessing))
	return k
}

// InsertAPIKeys writes API records in one statement, as the middleware's claim and completion
// leave them.
func InsertAPIKeys(t testing.TB, db Execer, keys ...APIKey) {
	t.Helper()
	n := len(keys)
	routes, scopes, hashes, clients, requests, algs, states, refs := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	calls, lapsed, updated := make([]int, n), make([]int64, n), make([]int64, n)
	for i, k := range keys {
		if k.KeyHash == "" {
			t.Fatal("ledgertest.InsertAPIKeys: a record needs its KeyHash")
		}
		k = k.Defaults()
		routes[i], scopes[i], hashes[i], clients[i] = k.Route, k.ScopeHash, k.KeyHash, k.ClientHash
		requests[i], algs[i], states[i], refs[i] = k.RequestHash, k.RequestHashAlg, k.State, k.ExternalRef
		calls[i], lapsed[i], updated[i] = k.CallsStarted, k.LeaseLapsedAgo.Milliseconds(), k.UpdatedAgo.Milliseconds()
	}
	if _, err := db.Exec(context.Background(), `
insert into api_keys (route, scope_hash, key_hash, client_hash, request_hash, request_hash_alg, state, external_ref,
                      calls_started, lease_owner, lease_expires_at, created_at, updated_at)
select u.route, u.scope_hash, u.key_hash, u.client_hash, u.request_hash, u.alg, u.state, nullif(u.ref, ''), u.calls,
       case when u.state = 'processing' then 'ledgertest' end,
       case when u.state <> 'processing' then null
            when u.lapsed_ms > 0 then now() - make_interval(secs => u.lapsed_ms / 1000.0)
            else now() + interval '1 minute' end,
       now() - make_interval(secs => u.updated_ms / 1000.0), now() - make_interval(secs => u.updated_ms / 1000.0)
  from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[],
              $10::bigint[], $11::bigint[])
       as u(route, scope_hash, key_hash, client_hash, request_hash, alg, state, ref, calls, lapsed_ms, updated_ms)`,
		routes, scopes, hashes, clients, requests, algs, states, refs, calls, lapsed, updated); err != nil {
		t.Fatalf("ledgertest.InsertAPIKeys: %v", err)
	}
}
