package ledgertest

import (
	"testing"
	"time"
)

// updateKeys runs one statement over the API idempotency records in states (every record when
// none are named).
func updateKeys(t testing.TB, db Execer, what, set string, states []string, args ...any) {
	t.Helper()
	sql := `update api_keys set ` + set + ` where (coalesce(cardinality($1::text[]), 0) = 0 or state = any($1))`
	if _, err := db.Exec(t.Context(), sql, append([]any{states}, args...)...); err != nil {
		t.Fatalf("ledgertest.%s: %v", what, err)
	}
}

// EndKeyWindows dates the replay and evidence windows of the API records in states (every record
// when none are named) back: they ended replayAgo and evidenceAgo ago. A zero duration leaves
// that window alone.
func EndKeyWindows(t testing.TB, db Execer, replayAgo, evidenceAgo time.Duration, states ...string) {
	t.Helper()
	updateKeys(t, db, "EndKeyWindows", `
replay_until = case when $2::bigint > 0 then now() - make_interval(secs => $2 / 1000.0) else replay_until end,
evidence_until = case when $3::bigint > 0 then now() - make_interval(secs => $3 / 1000.0) else evidence_until end`,
		states, replayAgo.Milliseconds(), evidenceAgo.Milliseconds())
}

// MakeKeyTombstones turns the API records in states (every record when none are named) into
// tombstones, as keys prune does when their replay window ends: state expired, no stored
// response.
func MakeKeyTombstones(t testing.TB, db Execer, states ...string) {
	t.Helper()
	updateKeys(t, db, "MakeKeyTombstones", `state = 'expired', response_sealed = null`, states)
}

// LapseKeyLeases makes the leases of the API records in processing lapse a second ago, as if
// their instance died.
func LapseKeyLeases(t testing.TB, db Execer) {
	t.Helper()
	updateKeys(t, db, "LapseKeyLeases", `lease_expires_at = now() - interval '1 second'`, []string{"processing"})
}
