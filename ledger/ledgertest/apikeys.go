package ledgertest

import (
	"testing"
	"time"
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
