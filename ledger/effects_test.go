package ledger_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

var effectKey = ledger.EffectKey{Consumer: "billing", EventID: "evt-1", EffectVersion: 1}

func claimFor(owner, hash string) ledger.EffectClaim {
	return ledger.EffectClaim{Key: effectKey, RequestHash: hash, RequestHashAlg: "canonical-json-v1", Owner: owner, Lease: time.Minute}
}

// claim reports whether c won the lease, and the row's attempt count after it.
func claim(t *testing.T, store *ledger.Store, c ledger.EffectClaim) (bool, int) {
	t.Helper()
	ok, err := ledger.EffectsClaim(t.Context(), store.Pool(), c)
	if err != nil {
		t.Fatal(err)
	}
	return ok, queryInt(t, store, `select coalesce(max(attempts), 0) from effects where event_id = $1 and effect_version = $2`,
		c.Key.EventID, c.Key.EffectVersion)
}

func effectRow(t *testing.T, store *ledger.Store) ledger.EffectRow {
	t.Helper()
	rows, err := ledger.EffectsForEvent(t.Context(), store.Pool(), effectKey.Consumer, effectKey.EventID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.EffectVersion == effectKey.EffectVersion {
			return r
		}
	}
	t.Fatalf("no row for %s", effectKey)
	return ledger.EffectRow{}
}

// lapse moves the lease into the past as a stalled holder would leave it.
func lapse(t *testing.T, store *ledger.Store) {
	t.Helper()
	if _, err := store.Pool().Exec(t.Context(), `update effects set lease_expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
}

// hitFor returns hit, which unwraps a conditional write's (hit a row, error) and fails t on the error.
func hitFor(t *testing.T) func(bool, error) bool {
	return func(ok bool, err error) bool {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
}

func TestEffectsClaimTakesOverOnlyALapsedLeaseWithoutCalls(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	hit := hitFor(t)
	if ok, attempts := claim(t, store, claimFor("a", "sha256:1")); !ok || attempts != 1 {
		t.Fatalf("first claim: %v attempt %d, want the lease on attempt 1", ok, attempts)
	}
	r := effectRow(t, store)
	if r.State != "processing" || r.LeaseOwner != "a" || !r.LeaseLive || r.LeaseRemaining < 50*time.Second || r.HeartbeatAt == nil {
		t.Fatalf("claimed row %+v", r)
	}
	if ok, _ := claim(t, store, claimFor("b", "sha256:1")); ok {
		t.Fatal("b took a live lease held by a")
	}

	lapse(t, store)
	if r := effectRow(t, store); r.LeaseLive || r.LeaseRemaining != 0 {
		t.Fatalf("lapsed lease reads live %v, %s left", r.LeaseLive, r.LeaseRemaining)
	}
	if ok, attempts := claim(t, store, claimFor("b", "sha256:1")); !ok || attempts != 2 {
		t.Fatalf("take-over of a lapsed lease without calls: %v attempt %d", ok, attempts)
	}
	if !hit(ledger.EffectsCallStarted(t.Context(), store.Pool(), effectKey, "b", 1)) {
		t.Fatal("b could not start a call under its live lease")
	}

	lapse(t, store)
	if ok, _ := claim(t, store, claimFor("c", "sha256:1")); ok {
		t.Fatal("c took over a lapsed lease after a call had started: the call might be made twice")
	}
	if hit(ledger.EffectsCallStarted(t.Context(), store.Pool(), effectKey, "b", 1)) {
		t.Fatal("b started a call under a lapsed lease")
	}
	if !hit(ledger.EffectsMarkLapsedUncertain(t.Context(), store.Pool(), effectKey)) {
		t.Fatal("a lapsed lease with a started call was not marked uncertain")
	}
	r = effectRow(t, store)
	if r.State != "uncertain" || !strings.Contains(r.LastError, "lease of b lapsed after 1 external call(s)") {
		t.Fatalf("after the lapse: state %s, last_error %q", r.State, r.LastError)
	}
	if ok, _ := claim(t, store, claimFor("c", "sha256:1")); ok {
		t.Fatal("an uncertain row was claimed")
	}
}

func TestEffectsMarkLapsedUncertainSparesALiveOrCallFreeLease(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	hit := hitFor(t)
	claim(t, store, claimFor("a", "sha256:1"))
	hit(ledger.EffectsCallStarted(t.Context(), store.Pool(), effectKey, "a", 1))
	if hit(ledger.EffectsMarkLapsedUncertain(t.Context(), store.Pool(), effectKey)) {
		t.Fatal("a live lease was marked uncertain")
	}
	if _, err := store.Pool().Exec(t.Context(), `update effects set calls_started = 0, lease_expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if hit(ledger.EffectsMarkLapsedUncertain(t.Context(), store.Pool(), effectKey)) {
		t.Fatal("a lapsed lease with no call started was marked uncertain instead of being left to take over")
	}
}

func TestEffectsClaimRefusesAChangedPayload(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	hit := hitFor(t)
	claim(t, store, claimFor("a", "sha256:1"))
	hit(ledger.EffectsRelease(t.Context(), store.Pool(), effectKey, "a", "timeout"))
	if ok, _ := claim(t, store, claimFor("b", "sha256:2")); ok {
		t.Fatal("a released row was claimed with a different request hash")
	}
	if r := effectRow(t, store); r.RequestHash != "sha256:1" || r.State != "received" {
		t.Fatalf("a refused claim changed the row: %s %s", r.State, r.RequestHash)
	}
}

// A row under another algorithm was taken over blindly, keeping its old hash (issue 15): now its
// hash is compared with the payload recomputed under its own algorithm, and a take-over moves the
// row to the current algorithm.
func TestEffectsClaimComparesUnderTheStoredAlgorithm(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	hit := hitFor(t)
	claim(t, store, claimFor("a", "sha256:v1-hash"))
	hit(ledger.EffectsRelease(t.Context(), store.Pool(), effectKey, "a", "timeout"))
	v2 := func(owner, storedAlg, storedHash string) ledger.EffectClaim {
		c := claimFor(owner, "sha256:v2-hash")
		c.RequestHashAlg, c.TakeOverHashAlg, c.TakeOverHash = "sha256-canon-v2+0badcafe", storedAlg, storedHash
		return c
	}
	for name, c := range map[string]ledger.EffectClaim{
		"a v2 claim without the v1 recomputation": v2("b", "", ""),
		"a different payload under v1":            v2("b", "canonical-json-v1", "sha256:other"),
		"a recomputation under another algorithm": v2("b", "sha256-canon-v2+12345678", "sha256:v1-hash"),
	} {
		if ok, _ := claim(t, store, c); ok {
			t.Fatalf("%s took over the v1 row", name)
		}
	}
	if ok, _ := claim(t, store, v2("c", "canonical-json-v1", "sha256:v1-hash")); !ok {
		t.Fatal("the same payload recomputed under the row's v1 algorithm could not take the row over")
	}
	if r := effectRow(t, store); r.RequestHash != "sha256:v2-hash" || r.RequestHashAlg != "sha256-canon-v2+0badcafe" || r.LeaseOwner != "c" {
		t.Fatalf("the take-over kept the old fingerprint: %s %s (owner %s)", r.RequestHashAlg, r.RequestHash, r.LeaseOwner)
	}
}

func TestEffectsLeaseWritesNeedTheOwner(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	hit := hitFor(t)
	ctx, q := t.Context(), store.Pool()
	claim(t, store, claimFor("a", "sha256:1"))
	before := effectRow(t, store)
	refs := json.RawMessage(`[{"kind":"charge","target":"acct-1","ref":"ch_1"}]`)
	attempts := map[string]func(owner string) (bool, error){
		"heartbeat":    func(o string) (bool, error) { return ledger.EffectsHeartbeat(ctx, q, effectKey, o, time.Hour) },
		"call started": func(o string) (bool, error) { return ledger.EffectsCallStarted(ctx, q, effectKey, o, 1) },
		"release":      func(o string) (bool, error) { return ledger.EffectsRelease(ctx, q, effectKey, o, "x") },
		"mark uncertain": func(o string) (bool, error) {
			return ledger.EffectsMarkUncertain(ctx, q, ledger.EffectUncertainty{Key: effectKey, Owner: o, LastError: "x"})
		},
		"complete": func(o string) (bool, error) {
			return ledger.EffectsComplete(ctx, q, ledger.EffectCompletion{Key: effectKey, Owner: o, ResultHash: "sha256:r",
				ResultBody: json.RawMessage(`{}`), ExternalRefs: refs, EffectCount: 1})
		},
	}
	for name, write := range attempts {
		if hit(write("b")) {
			t.Errorf("%s by a non-owner hit the row", name)
		}
	}
	after := effectRow(t, store)
	if after.UpdatedAt != before.UpdatedAt || after.State != "processing" || after.LeaseOwner != "a" || after.CallsStarted != 0 {
		t.Fatalf("non-owner writes changed the row: %+v", after)
	}
}

func TestEffectsHeartbeatExtendsTheLease(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	hit := hitFor(t)
	c := claimFor("a", "sha256:1")
	c.Lease = time.Second
	claim(t, store, c)
	before := effectRow(t, store)
	if !hit(ledger.EffectsHeartbeat(t.Context(), store.Pool(), effectKey, "a", time.Hour)) {
		t.Fatal("the owner's heartbeat missed its row")
	}
	after := effectRow(t, store)
	if after.LeaseRemaining < 59*time.Minute || !after.HeartbeatAt.After(*before.HeartbeatAt) {
		t.Fatalf("heartbeat: %s left (was %s), heartbeat_at %s -> %s", after.LeaseRemaining, before.LeaseRemaining,
			before.HeartbeatAt, after.HeartbeatAt)
	}
}

func TestEffectsCompleteStoresTheOutcomeAndRetention(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	hit := hitFor(t)
	claim(t, store, claimFor("a", "sha256:1"))
	refs := json.RawMessage(`[{"kind":"charge","target":"acct-1","ref":"ch_1"},{"kind":"email","target":"u-1","suppressed":true}]`)
	if !hit(ledger.EffectsComplete(t.Context(), store.Pool(), ledger.EffectCompletion{
		Key: effectKey, Owner: "a", ResultHash: "sha256:r", ResultBody: json.RawMessage(`{"error":"card declined"}`),
		OutcomeKind: "business", EffectCount: 1, ExternalRefs: refs, LastError: "card declined",
		ResultRetention: 24 * time.Hour, EvidenceRetention: 400 * 24 * time.Hour,
	})) {
		t.Fatal("complete missed the owner's row")
	}
	r := effectRow(t, store)
	if r.State != "completed" || r.ResultHash != "sha256:r" || r.OutcomeKind != "business" || r.EffectCount != 1 ||
		r.LastError != "card declined" || r.LeaseOwner != "" || r.LeaseExpiresAt != nil {
		t.Fatalf("completed row %+v", r)
	}
	var body map[string]string
	var stored []map[string]any
	if json.Unmarshal(r.ResultBody, &body) != nil || body["error"] != "card declined" ||
		json.Unmarshal(r.ExternalRefs, &stored) != nil || len(stored) != 2 || stored[1]["suppressed"] != true {
		t.Fatalf("result_body %s external_refs %s", r.ResultBody, r.ExternalRefs)
	}
	replayDays := queryInt(t, store, `select round(extract(epoch from replay_until - updated_at) / 3600) from effects`)
	evidenceDays := queryInt(t, store, `select round(extract(epoch from evidence_until - updated_at) / 86400) from effects`)
	if replayDays != 24 || evidenceDays != 400 {
		t.Fatalf("replay_until %d h, evidence_until %d days after completion; want 24 h and 400 days", replayDays, evidenceDays)
	}
}

func TestEffectsReleaseLetsTheEventBeClaimedAgain(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	hit := hitFor(t)
	claim(t, store, claimFor("a", "sha256:1"))
	hit(ledger.EffectsCallStarted(t.Context(), store.Pool(), effectKey, "a", 1))
	if !hit(ledger.EffectsRelease(t.Context(), store.Pool(), effectKey, "a", "provider said 503")) {
		t.Fatal("release missed the owner's row")
	}
	r := effectRow(t, store)
	if r.State != "received" || r.OutcomeKind != "transient" || r.LastError != "provider said 503" || r.CallsStarted != 0 || r.LeaseOwner != "" {
		t.Fatalf("released row %+v", r)
	}
	if ok, attempts := claim(t, store, claimFor("b", "sha256:1")); !ok || attempts != 2 {
		t.Fatalf("claim after release: %v attempt %d", ok, attempts)
	}
}

func TestEffectsMarkUncertainKeepsTheEvidence(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	hit := hitFor(t)
	claim(t, store, claimFor("a", "sha256:1"))
	refs := json.RawMessage(`[{"kind":"charge","target":"acct-1","ref":"ch_1"}]`)
	if !hit(ledger.EffectsMarkUncertain(t.Context(), store.Pool(), ledger.EffectUncertainty{
		Key: effectKey, Owner: "a", EffectCount: 1, ExternalRefs: refs, LastError: "call 2 (email u-1): outcome unknown",
	})) {
		t.Fatal("mark uncertain missed the owner's row")
	}
	r := effectRow(t, store)
	if r.State != "uncertain" || r.EffectCount != 1 || r.LeaseOwner != "a" || r.LeaseExpiresAt != nil || !strings.Contains(r.LastError, "call 2") {
		t.Fatalf("uncertain row %+v", r)
	}
	if ok, _ := claim(t, store, claimFor("a", "sha256:1")); ok {
		t.Fatal("an uncertain row was claimed again")
	}
}

func TestEffectsForEventReadsEveryVersionInOrder(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	var rows []ledger.EffectRow
	for _, v := range []int{3, 1, 2} {
		rows = append(rows, ledger.EffectRow{Consumer: "billing", EventID: "evt-1", EffectVersion: v, State: "received",
			RequestHash: "sha256:1", RequestHashAlg: "canonical-json-v1", JobID: map[int]string{1: "", 2: "job-2", 3: "job-3"}[v]})
	}
	rows = append(rows, ledger.EffectRow{Consumer: "billing", EventID: "evt-2", EffectVersion: 1, State: "received",
		RequestHash: "sha256:1", RequestHashAlg: "canonical-json-v1"})
	if _, err := store.EffectsImport(t.Context(), rows); err != nil {
		t.Fatal(err)
	}
	got, err := ledger.EffectsForEvent(t.Context(), store.Pool(), "billing", "evt-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].EffectVersion != 1 || got[1].EffectVersion != 2 || got[2].EffectVersion != 3 {
		t.Fatalf("rows %+v", got)
	}
	if got[0].JobID != "" || got[2].JobID != "job-3" || got[0].ResultBody != nil || string(got[0].ExternalRefs) != "[]" {
		t.Fatalf("job IDs %q %q, body %s, refs %s", got[0].JobID, got[2].JobID, got[0].ResultBody, got[0].ExternalRefs)
	}
}

func TestEffectsClaimRefusesWhileAnotherVersionIsLeasedUncertainOrSettled(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	v2 := claimFor("replay", "sha256:1")
	v2.Key.EffectVersion = 2
	v2.JobID = "job-1"
	setState := func(state string) {
		t.Helper()
		if _, err := store.Pool().Exec(t.Context(), `update effects set state = $1 where effect_version = 1`, state); err != nil {
			t.Fatal(err)
		}
	}

	if ok, _ := claim(t, store, claimFor("live", "sha256:1")); !ok {
		t.Fatal("the live copy did not get the lease")
	}
	if ok, _ := claim(t, store, v2); ok {
		t.Fatal("a replay was claimed while the live copy of the same event held its lease")
	}
	setState("uncertain")
	if ok, _ := claim(t, store, v2); ok {
		t.Fatal("a replay was claimed while another version of the event is uncertain")
	}

	// A version completed under an older version: a replay runs again (that is its point), a live copy does not.
	setState("completed")
	live3 := claimFor("live", "sha256:1")
	live3.Key.EffectVersion, live3.AnyVersionSettles = 3, true
	if ok, _ := claim(t, store, live3); ok {
		t.Fatal("a live copy was claimed although another version of the event completed")
	}
	if ok, _ := claim(t, store, v2); !ok {
		t.Fatal("the replay was refused although the only other version is completed")
	}
}

// TestEffectsClaimAcrossVersionsHasOneWinner races a live copy's claim (version 1) against its
// replay's (version 2), many times: different keys, so only the per-event lock keeps both from
// winning and calling out twice.
func TestEffectsClaimAcrossVersionsHasOneWinner(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	for i := range 40 {
		live := claimFor("live", "sha256:1")
		live.Key.EventID = fmt.Sprintf("race-%02d", i)
		replay := live
		replay.Key.EffectVersion, replay.Owner, replay.JobID = 2, "replay", "job-1"
		start := make(chan struct{})
		won := make([]bool, 2)
		var wg sync.WaitGroup
		for j, c := range []ledger.EffectClaim{live, replay} {
			wg.Go(func() {
				<-start
				ok, err := ledger.EffectsClaim(t.Context(), store.Pool(), c)
				if err != nil {
					t.Error(err)
				}
				won[j] = ok
			})
		}
		close(start)
		wg.Wait()
		if won[0] == won[1] {
			t.Fatalf("event %s: live won %v, replay won %v; want exactly one winner", live.Key.EventID, won[0], won[1])
		}
	}
}
