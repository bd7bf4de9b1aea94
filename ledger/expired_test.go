package ledger_test

import (
	"testing"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// A verdict about expired evidence is a compare-and-set: it writes a missing row or a tombstone,
// never a row someone settled or claimed since it was read.
func TestAnExpiredVerdictOnlyReplacesATombstoneOrNothing(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	seedRows(t, store,
		lifecycleRows{consumer: "billing", prefix: "tomb-", state: "completed", n: 1, replayIn: "-40 days", evidenceIn: "-1 day"},
		lifecycleRows{consumer: "billing", prefix: "live-", state: "completed", n: 1, replayIn: "10 days", evidenceIn: "300 days"})
	if _, err := store.Prune(t.Context(), ledger.PruneOptions{Consumer: "billing", Actor: "alice"}); err != nil {
		t.Fatal(err)
	}
	verdict := func(eventID, v string) bool {
		t.Helper()
		ok, err := ledger.EffectsApplyExpiredVerdict(t.Context(), store.Pool(), ledger.ExpiredVerdict{
			Key: ledger.EffectKey{Consumer: "billing", EventID: eventID, EffectVersion: 1}, RequestHash: "sha256:x",
			RequestHashAlg: "canonical-json-v1", Verdict: v, Note: "provider says " + v, Actor: "instance-a"})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !verdict("tomb-0001", ledger.VerdictHappened) || !verdict("gone-0001", ledger.VerdictUnknown) {
		t.Fatal("a verdict on a tombstone or a missing row was not written")
	}
	if verdict("live-0001", ledger.VerdictUnknown) || verdict("tomb-0001", ledger.VerdictUnknown) {
		t.Fatal("a verdict overwrote a row that is not a tombstone")
	}
	for _, want := range []struct{ event, state, review string }{
		{"tomb-0001", "reconciled", ""}, {"gone-0001", "uncertain", "manual_review"}, {"live-0001", "completed", ""},
	} {
		if n := queryInt(t, store, `select count(*) from effects where event_id = $1 and state = $2 and coalesce(review_state, '') = $3`,
			want.event, want.state, want.review); n != 1 {
			t.Errorf("%s: not %s (review %q)", want.event, want.state, want.review)
		}
	}
	if n := queryInt(t, store, `select count(*) from effects where event_id = 'tomb-0001' and request_hash = 'sha256:req-tomb-1'
   and final_state = 'completed' and review_note = 'provider says happened'`); n != 1 {
		t.Error("the reconciled tombstone lost its request hash or final state, or lacks the look-up's note")
	}
	if n := queryInt(t, store, `select count(*) from audit where action = $1`, ledger.AuditEvidenceExpired); n != 2 {
		t.Errorf("%d audit entries, want one per verdict written (2)", n)
	}
}
