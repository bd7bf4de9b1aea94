// Package ledgertest writes ledger rows for tests by what they mean ("an effect in processing
// whose lease lapsed", "a tombstone") instead of by column (river's testfactory). The columns stay
// here, beside the migrations, so a renamed column fails to compile or fails here, not in a
// statement copied into sixty test files.
package ledgertest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Execer is a pool, connection or transaction a test writes through (pgtest.Pool).
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Effect is one effects row; a zero field takes the default its comment names.
type Effect struct {
	Consumer string // "billing"
	EventID  string // required
	Version  int    // 1
	State    string // "completed"
	// RequestHash is the payload's fingerprint: "sha256:" + EventID when empty; pass
	// fingerprint.Payload(payload) for a row the SDK must find a duplicate of.
	RequestHash    string
	RequestHashAlg string // canonical-json-v1, the column's default
	EffectCount    int
	CallsStarted   int
	Attempts       int
	JobID          string
	LastError      string
	// LeaseOwner holds the row; LeaseLapsedAgo > 0 makes its lease one that lapsed that long ago.
	LeaseOwner     string
	LeaseLapsedAgo time.Duration
	// UpdatedAgo and CreatedAgo date the row back, as a row that has waited (an uncertain row's
	// age is measured from updated_at).
	UpdatedAgo, CreatedAgo time.Duration
}

const effectInsert = `
insert into effects (consumer, event_id, effect_version, state, request_hash, request_hash_alg, effect_count,
                     calls_started, attempts, job_id, last_error, lease_owner, lease_expires_at, updated_at, created_at)
select u.consumer, u.event_id, u.version, u.state, u.request_hash, coalesce(nullif(u.alg, ''), 'canonical-json-v1'),
       u.effect_count, u.calls_started, u.attempts, nullif(u.job_id, ''), nullif(u.last_error, ''), nullif(u.lease_owner, ''),
       case when u.lapsed_ms > 0 then now() - make_interval(secs => u.lapsed_ms / 1000.0) end,
       now() - make_interval(secs => u.updated_ms / 1000.0), now() - make_interval(secs => u.created_ms / 1000.0)
  from unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::int[], $8::int[], $9::int[],
              $10::text[], $11::text[], $12::text[], $13::bigint[], $14::bigint[], $15::bigint[])
       as u(consumer, event_id, version, state, request_hash, alg, effect_count, calls_started, attempts, job_id,
            last_error, lease_owner, lapsed_ms, updated_ms, created_ms)`

// Defaults returns e with its defaults filled in, as InsertEffects stores it.
func (e Effect) Defaults() Effect {
	e.Consumer, e.Version, e.State = or(e.Consumer, "billing"), max(e.Version, 1), or(e.State, "completed")
	e.RequestHash, e.RequestHashAlg = or(e.RequestHash, "sha256:"+e.EventID), or(e.RequestHashAlg, "canonical-json-v1")
	return e
}

// InsertEffects writes effects rows in one statement.
func InsertEffects(t testing.TB, db Execer, effects ...Effect) {
	t.Helper()
	n := len(effects)
	var (
		consumers, events, states, hashes, algs, jobs, errs, owners = make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		versions, counts, calls, attempts = make([]int, n), make([]int, n), make([]int, n), make([]int, n)
		lapsed, updated, created          = make([]int64, n), make([]int64, n), make([]int64, n)
	)
	for i, e := range effects {
		if e.EventID == "" {
			t.Fatal("ledgertest.InsertEffects: an effect needs its EventID")
		}
		e = e.Defaults()
		consumers[i], events[i], versions[i], states[i] = e.Consumer, e.EventID, e.Version, e.State
		hashes[i], algs[i] = e.RequestHash, e.RequestHashAlg
		counts[i], calls[i], attempts[i], jobs[i], errs[i], owners[i] = e.EffectCount, e.CallsStarted, e.Attempts, e.JobID, e.LastError, e.LeaseOwner
		lapsed[i], updated[i], created[i] = e.LeaseLapsedAgo.Milliseconds(), e.UpdatedAgo.Milliseconds(), e.CreatedAgo.Milliseconds()
	}
	if _, err := db.Exec(context.Background(), effectInsert, consumers, events, versions, states, hashes, algs, counts, calls,
		attempts, jobs, errs, owners, lapsed, updated, created); err != nil {
		t.Fatalf("ledgertest.InsertEffects: %v", err)
	}
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// update runs one statement over the rows of table whose column is one of values, or every row
// when none are named; set's own parameters start at $2.
func update(t testing.TB, db Execer, what, table, column, set string, values []string, args ...any) {
	t.Helper()
	sql := `update ` + table + ` set ` + set + ` where (coalesce(cardinality($1::text[]), 0) = 0 or ` + column + ` = any($1))`
	if _, err := db.Exec(context.Background(), sql, append([]any{values}, args...)...); err != nil {
		t.Fatalf("ledgertest.%s: %v", what, err)
	}
}

// LapseLeases makes the leases of eventIDs' rows (every row when none are named) lapse a second
// ago, as if their holder died.
func LapseLeases(t testing.TB, db Execer, eventIDs ...string) {
	t.Helper()
	update(t, db, "LapseLeases", "effects", "event_id", `lease_expires_at = now() - interval '1 second'`, eventIDs)
}

// MakeTombstones turns eventIDs' rows (every row when none are named) into tombstones, as prune
// does when their evidence window ends: state expired, the state they ended in kept.
func MakeTombstones(t testing.TB, db Execer, eventIDs ...string) {
	t.Helper()
	update(t, db, "MakeTombstones", "effects", "event_id", `state = 'expired', final_state = state`, eventIDs)
}

// endWindows dates a row's replay_until and evidence_until back by $2 and $3 milliseconds; 0
// leaves the window alone. Effects rows and API records name their windows alike.
const endWindows = `
replay_until = case when $2::bigint > 0 then now() - make_interval(secs => $2 / 1000.0) else replay_until end,
evidence_until = case when $3::bigint > 0 then now() - make_interval(secs => $3 / 1000.0) else evidence_until end`

// EndWindows dates the replay and evidence windows of eventIDs' rows (every row when none are
// named) back: they ended replayAgo and evidenceAgo ago. A zero duration leaves that window alone.
func EndWindows(t testing.TB, db Execer, replayAgo, evidenceAgo time.Duration, eventIDs ...string) {
	t.Helper()
	update(t, db, "EndWindows", "effects", "event_id", endWindows,
		eventIDs, replayAgo.Milliseconds(), evidenceAgo.Milliseconds())
}

// ForbidWrites marks eventIDs' rows as written with external writes forbidden (a write-forbidden
// replay's rows).
func ForbidWrites(t testing.TB, db Execer, eventIDs ...string) {
	t.Helper()
	update(t, db, "ForbidWrites", "effects", "event_id", `write_forbidden = true`, eventIDs)
}

// AskedAgo dates the last reconcile look-up of eventIDs' rows (every row when none are named) d
// ago, as if the worker had asked then.
func AskedAgo(t testing.TB, db Execer, d time.Duration, eventIDs ...string) {
	t.Helper()
	update(t, db, "AskedAgo", "effects", "event_id", `reviewed_at = now() - make_interval(secs => $2 / 1000.0)`, eventIDs, d.Milliseconds())
}

// StickLeases makes eventIDs' rows (every row when none are named) leases that got stuck: owned by
// owner, in processing with calls started, lapsed lapsedAgo ago and last updated a minute before
// that, as an instance killed in its call leaves them.
func StickLeases(t testing.TB, db Execer, owner string, calls int, lapsedAgo time.Duration, eventIDs ...string) {
	t.Helper()
	update(t, db, "StickLeases", "effects", "event_id", `state = 'processing', lease_owner = $2, calls_started = $3,
		lease_expires_at = now() - make_interval(secs => $4 / 1000.0),
		updated_at = now() - make_interval(secs => $4 / 1000.0) - interval '1 minute'`,
		eventIDs, owner, calls, lapsedAgo.Milliseconds())
}

// SettleByHand marks eventIDs' rows reconciled now, as an operator settling them outside replayctl
// would: a change a reconcile that listed them earlier must notice.
func SettleByHand(t testing.TB, db Execer, eventIDs ...string) {
	t.Helper()
	update(t, db, "SettleByHand", "effects", "event_id", `state = 'reconciled', updated_at = now()`, eventIDs)
}

// MarkForManualReview records a look-up's verdict on eventIDs' rows now and leaves them for a
// person, as a concurrent reconcile run does.
func MarkForManualReview(t testing.TB, db Execer, verdict string, eventIDs ...string) {
	t.Helper()
	update(t, db, "MarkForManualReview", "effects", "event_id",
		`reviewed_at = now(), review_state = 'manual_review', review_verdict = $2`, eventIDs, verdict)
}

// ForgetResultBodies removes the stored result bodies of eventIDs' rows, wherever the row's body
// is kept (the effects row before migration 0033, effect_bodies since), as a body lost or never
// stored leaves them: their result hashes stay.
func ForgetResultBodies(t testing.TB, db Execer, eventIDs ...string) {
	t.Helper()
	update(t, db, "ForgetResultBodies", "effects", "event_id", `result_body = null`, eventIDs)
	if _, err := db.Exec(context.Background(), `delete from effect_bodies where coalesce(cardinality($1::text[]), 0) = 0 or event_id = any($1)`, eventIDs); err != nil {
		t.Fatalf("ledgertest.ForgetResultBodies: %v", err)
	}
}

// TakeOverLeases gives the leases of eventIDs' rows (every row when none are named) to owner, as
// another instance taking an event over does: the instance that held them has lost them.
func TakeOverLeases(t testing.TB, db Execer, owner string, eventIDs ...string) {
	t.Helper()
	update(t, db, "TakeOverLeases", "effects", "event_id", `lease_owner = $2`, eventIDs, owner)
}
