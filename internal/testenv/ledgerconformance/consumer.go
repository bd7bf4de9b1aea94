package ledgerconformance

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

// ConsumerSeeder writes what consumer.Ledger only reads (rows in any state, jobs, their targets,
// executing versions) and reads back the targets and audit entries it writes.
type ConsumerSeeder interface {
	UncertainSeeder
	LapseLeases(eventIDs ...string)
	MakeTombstones(eventIDs ...string)
	ForbidWrites(eventIDs ...string)
	RegisterEffectVersion(consumer string, version int, state, jobID string)
}

// Consumer checks consumer.Ledger's own methods (its reconcile half is Uncertain's): open
// returns an empty store of its own for each subtest, and the seeder that writes into it.
func Consumer(t *testing.T, open func(t *testing.T) (consumer.Ledger, ConsumerSeeder)) {
	key := func(id string, version int) ledger.EffectKey {
		return ledger.EffectKey{Consumer: "billing", EventID: id, EffectVersion: version}
	}
	claimOf := func(id string, version int, owner string) ledger.EffectClaim {
		return ledger.EffectClaim{Key: key(id, version), RequestHash: "sha256:" + id, RequestHashAlg: "canonical-json-v1",
			Owner: owner, Lease: time.Minute}
	}
	row := func(t *testing.T, store consumer.Ledger, id string, version int) ledger.EffectRow {
		t.Helper()
		rows, err := store.EffectsForEvent(t.Context(), "billing", id)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.EffectVersion == version {
				return r
			}
		}
		t.Fatalf("no row of %s version %d in %+v", id, version, rows)
		return ledger.EffectRow{}
	}
	claimed := func(t *testing.T, store consumer.Ledger, c ledger.EffectClaim) bool {
		t.Helper()
		ok, err := store.EffectsClaim(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	t.Run("a claim inserts a leased row, and takes over only a released row or a lease lapsed before any call", func(t *testing.T) {
		store, seed := open(t)
		if !claimed(t, store, claimOf("evt-new", 1, "o1")) || claimed(t, store, claimOf("evt-new", 1, "o2")) {
			t.Fatal("want the first claim to win and the second to lose to its live lease")
		}
		if r := row(t, store, "evt-new", 1); r.State != "processing" || r.LeaseOwner != "o1" || !r.LeaseLive || r.Attempts != 1 || r.CallsStarted != 0 {
			t.Errorf("claimed %+v", r)
		}
		seed.AddEffects(ledgertest.Effect{EventID: "evt-received", State: "received"},
			ledgertest.Effect{EventID: "evt-lapsed", State: "processing", LeaseOwner: "dead", LeaseLapsedAgo: time.Second},
			ledgertest.Effect{EventID: "evt-lapsed-mid-call", State: "processing", LeaseOwner: "dead", LeaseLapsedAgo: time.Second, CallsStarted: 1},
			ledgertest.Effect{EventID: "evt-completed"},
			ledgertest.Effect{EventID: "evt-other-body", State: "received", RequestHash: "sha256:another"})
		for id, want := range map[string]bool{"evt-received": true, "evt-lapsed": true, "evt-lapsed-mid-call": false,
			"evt-completed": false, "evt-other-body": false} {
			if got := claimed(t, store, claimOf(id, 1, "o1")); got != want {
				t.Errorf("claim of %s: %v, want %v", id, got, want)
			}
		}
		if r := row(t, store, "evt-lapsed", 1); r.LeaseOwner != "o1" || r.Attempts != 1 || !r.LeaseLive {
			t.Errorf("taken over %+v; want o1's, one attempt more than the seeded row's", r)
		}
	})
	t.Run("a claim takes over a row read under an older fingerprint algorithm and moves it to the new", func(t *testing.T) {
		store, seed := open(t)
		seed.AddEffects(ledgertest.Effect{EventID: "evt-1", State: "received", RequestHash: "sha256:old", RequestHashAlg: "old-v1"})
		c := claimOf("evt-1", 1, "o1")
		c.TakeOverHash, c.TakeOverHashAlg = "sha256:stale", "old-v1"
		if claimed(t, store, c) {
			t.Fatal("a row whose stored hash differs from the recomputed one was taken over")
		}
		c.TakeOverHash = "sha256:old"
		if !claimed(t, store, c) {
			t.Fatal("the row holding the recomputed fingerprint was not taken over")
		}
		if r := row(t, store, "evt-1", 1); r.RequestHash != "sha256:evt-1" || r.RequestHashAlg != "canonical-json-v1" {
			t.Errorf("fingerprint after the take-over %s %s; want the claim's", r.RequestHashAlg, r.RequestHash)
		}
	})
	t.Run("another version's lease, uncertainty or real settlement refuses the claim", func(t *testing.T) {
		store, seed := open(t)
		seed.AddEffects(ledgertest.Effect{EventID: "evt-uncertain", State: "uncertain"},
			ledgertest.Effect{EventID: "evt-completed"}, ledgertest.Effect{EventID: "evt-forbidden"},
			ledgertest.Effect{EventID: "evt-released", State: "received"})
		seed.ForbidWrites("evt-forbidden")
		if !claimed(t, store, claimOf("evt-leased", 1, "o1")) {
			t.Fatal("claim")
		}
		settles := func(c ledger.EffectClaim) ledger.EffectClaim { c.AnyVersionSettles = true; return c }
		for _, c := range []struct {
			claim ledger.EffectClaim
			want  bool
		}{
			{claimOf("evt-uncertain", 2, "o2"), false},
			{claimOf("evt-leased", 2, "o2"), false},
			{settles(claimOf("evt-completed", 2, "o2")), false},
			{claimOf("evt-completed", 2, "o2"), true},
			{settles(claimOf("evt-forbidden", 2, "o2")), true},
			{settles(claimOf("evt-released", 2, "o2")), true},
		} {
			if got := claimed(t, store, c.claim); got != c.want {
				t.Errorf("claim of %s (any version settles %v): %v, want %v", c.claim.Key, c.claim.AnyVersionSettles, got, c.want)
			}
		}
	})
	t.Run("heartbeats and call marks are the owner's, a call only under a live lease", func(t *testing.T) {
		store, seed := open(t)
		if !claimed(t, store, claimOf("evt-1", 1, "o1")) {
			t.Fatal("claim")
		}
		for _, c := range []struct {
			what string
			ok   func() (bool, error)
			want bool
		}{
			{"another owner's heartbeat", func() (bool, error) { return store.EffectsHeartbeat(t.Context(), key("evt-1", 1), "o2", time.Minute) }, false},
			{"another owner's call", func() (bool, error) { return store.EffectsCallStarted(t.Context(), key("evt-1", 1), "o2", 1) }, false},
			{"the second call", func() (bool, error) { return store.EffectsCallStarted(t.Context(), key("evt-1", 1), "o1", 2) }, true},
			{"the first call, late", func() (bool, error) { return store.EffectsCallStarted(t.Context(), key("evt-1", 1), "o1", 1) }, true},
		} {
			if ok, err := c.ok(); err != nil || ok != c.want {
				t.Errorf("%s: %v, %v; want %v", c.what, ok, err, c.want)
			}
		}
		if r := row(t, store, "evt-1", 1); r.CallsStarted != 2 {
			t.Errorf("calls started %d, want 2: marks sent out of order keep the highest", r.CallsStarted)
		}
		seed.LapseLeases("evt-1")
		if ok, err := store.EffectsCallStarted(t.Context(), key("evt-1", 1), "o1", 3); err != nil || ok {
			t.Errorf("a call under a lapsed lease: %v, %v; want refused", ok, err)
		}
		if ok, err := store.EffectsHeartbeat(t.Context(), key("evt-1", 1), "o1", time.Minute); err != nil || !ok {
			t.Errorf("the owner's heartbeat after its lease lapsed, nobody having taken it: %v, %v; want renewed", ok, err)
		}
		if r := row(t, store, "evt-1", 1); !r.LeaseLive || r.HeartbeatAt == nil {
			t.Errorf("after the heartbeat %+v", r)
		}
	})
	t.Run("a completion stores the outcome for the owner only, its lease lapsed or not", func(t *testing.T) {
		store, seed := open(t)
		if !claimed(t, store, claimOf("evt-1", 1, "o1")) {
			t.Fatal("claim")
		}
		done := ledger.EffectCompletion{Key: key("evt-1", 1), Owner: "o2", ResultHash: "sha256:result", ResultBody: json.RawMessage(`{"charged":true}`),
			EffectCount: 1, ExternalRefs: json.RawMessage(`[{"kind":"charge","target":"stripe","ref":"ch_1"}]`),
			ResultRetention: time.Hour, EvidenceRetention: 3 * time.Hour}
		if ok, err := store.EffectsComplete(t.Context(), done); err != nil || ok {
			t.Fatalf("another owner's completion: %v, %v", ok, err)
		}
		seed.LapseLeases("evt-1")
		done.Owner = "o1"
		if ok, err := store.EffectsComplete(t.Context(), done); err != nil || !ok {
			t.Fatalf("the owner's completion after its lease lapsed: %v, %v", ok, err)
		}
		r := row(t, store, "evt-1", 1)
		var body, refs any
		_ = json.Unmarshal(r.ResultBody, &body)
		_ = json.Unmarshal(r.ExternalRefs, &refs)
		if r.State != "completed" || r.ResultHash != "sha256:result" || body.(map[string]any)["charged"] != true || r.EffectCount != 1 ||
			!strings.Contains(jsonString(refs), `"ref":"ch_1"`) || r.LeaseOwner != "" || r.LeaseLive || r.ReplayUntil == nil ||
			r.EvidenceUntil == nil || r.EvidenceUntil.Sub(*r.ReplayUntil) != 2*time.Hour || r.WriteForbidden {
			t.Errorf("completed %+v", r)
		}
	})
	t.Run("a release frees the row for a redelivery; marks keep the owner for review", func(t *testing.T) {
		store, seed := open(t)
		for _, id := range []string{"evt-released", "evt-uncertain"} {
			if !claimed(t, store, claimOf(id, 1, "o1")) {
				t.Fatal("claim")
			}
		}
		if ok, err := store.EffectsRelease(t.Context(), key("evt-released", 1), "o1", "provider said 503"); err != nil || !ok {
			t.Fatalf("release: %v, %v", ok, err)
		}
		if r := row(t, store, "evt-released", 1); r.State != "received" || r.LeaseOwner != "" || r.OutcomeKind != "transient" ||
			r.LastError != "provider said 503" {
			t.Errorf("released %+v", r)
		}
		if ok, err := store.EffectsMarkUncertain(t.Context(), ledger.EffectUncertainty{Key: key("evt-uncertain", 1), Owner: "o1",
			EffectCount: 1, LastError: "timed out after the call"}); err != nil || !ok {
			t.Fatalf("mark uncertain: %v, %v", ok, err)
		}
		if r := row(t, store, "evt-uncertain", 1); r.State != "uncertain" || r.LeaseOwner != "o1" || r.LeaseLive || r.EffectCount != 1 {
			t.Errorf("marked %+v", r)
		}
		seed.AddEffects(ledgertest.Effect{EventID: "evt-lapsed", State: "processing", LeaseOwner: "dead", LeaseLapsedAgo: time.Second, CallsStarted: 2},
			ledgertest.Effect{EventID: "evt-lapsed-before-a-call", State: "processing", LeaseOwner: "dead", LeaseLapsedAgo: time.Second})
		if ok, err := store.EffectsMarkLapsedUncertain(t.Context(), key("evt-lapsed-before-a-call", 1)); err != nil || ok {
			t.Errorf("a lease lapsed before any call: %v, %v; want left for a claim", ok, err)
		}
		if ok, err := store.EffectsMarkLapsedUncertain(t.Context(), key("evt-lapsed", 1)); err != nil || !ok {
			t.Fatalf("mark lapsed: %v, %v", ok, err)
		}
		if r := row(t, store, "evt-lapsed", 1); r.State != "uncertain" || !strings.Contains(r.LastError, "lease of dead lapsed after 2 external call(s)") {
			t.Errorf("lapsed %+v", r)
		}
		summary, err := store.EffectsUncertainSummary(t.Context(), "billing")
		if err != nil || summary.Count != 2 {
			t.Errorf("summary %+v, %v; want 2 uncertain", summary, err)
		}
	})
	t.Run("the look-up's verdict on expired evidence writes a tombstone's or a missing row, nothing else", func(t *testing.T) {
		store, seed := open(t)
		seed.AddEffects(ledgertest.Effect{EventID: "evt-happened", EffectCount: 1}, ledgertest.Effect{EventID: "evt-not-happened"},
			ledgertest.Effect{EventID: "evt-live"})
		seed.MakeTombstones("evt-happened", "evt-not-happened")
		verdict := func(id, v string) bool {
			t.Helper()
			ok, err := store.EffectsApplyExpiredVerdict(t.Context(), ledger.ExpiredVerdict{Key: key(id, 1), RequestHash: "sha256:" + id,
				RequestHashAlg: "canonical-json-v1", Verdict: v, Note: "looked up", Actor: "host-1", EvidenceRetention: time.Hour,
				ExternalRefs: json.RawMessage(`[{"kind":"charge","target":"stripe","ref":"ch_9"}]`)})
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !verdict("evt-happened", ledger.VerdictHappened) || !verdict("evt-missing", ledger.VerdictUnknown) || verdict("evt-live", ledger.VerdictHappened) {
			t.Fatal("want the tombstone and the missing row written, the live row left alone")
		}
		if r := row(t, store, "evt-happened", 1); r.State != ledger.EffectReconciled || r.EvidenceUntil == nil || !strings.Contains(string(r.ExternalRefs), "ch_9") {
			t.Errorf("reconciled tombstone %+v", r)
		}
		if r := row(t, store, "evt-missing", 1); r.State != "uncertain" || !strings.Contains(r.LastError, "review it by hand") {
			t.Errorf("row for review %+v", r)
		}
		if r := row(t, store, "evt-live", 1); r.State != "completed" {
			t.Errorf("live row %+v", r)
		}
		n, err := store.EffectsReopenExpired(t.Context(), "billing", "evt-not-happened", []int{1, 2}, "never charged", "host-1")
		if err != nil || n != 1 {
			t.Fatalf("reopen: %d, %v", n, err)
		}
		if r := row(t, store, "evt-not-happened", 1); r.State != ledger.EffectReceived || r.EvidenceUntil != nil {
			t.Errorf("reopened %+v", r)
		}
		if n, err := store.EffectsReopenExpired(t.Context(), "billing", "evt-live", []int{1}, "", "host-1"); err != nil || n != 0 {
			t.Errorf("reopen of a live row: %d, %v", n, err)
		}
		expired := 0
		for _, a := range seed.AuditActions() {
			if a == ledger.AuditEvidenceExpired {
				expired++
			}
		}
		if expired != 3 {
			t.Errorf("%d %s entries, want one per row written", expired, ledger.AuditEvidenceExpired)
		}
	})
	t.Run("a replay's version is accepted only for the job executing it, and its dead letters fail its targets", func(t *testing.T) {
		store, seed := open(t)
		seed.AddJob(ledgertest.Job{ID: "job-1"})
		seed.RegisterEffectVersion("billing", 2, ledger.EffectVersionExecuting, "job-1")
		if r, err := store.EffectVersionsIsExecuting(t.Context(), "billing", 2, "job-1"); err != nil || !r.Executing || r.SourceKind != "dlq" {
			t.Errorf("the executing job: %+v, %v", r, err)
		}
		if r, err := store.EffectVersionsIsExecuting(t.Context(), "billing", 2, "job-2"); err != nil || r.Executing {
			t.Errorf("another job: %+v, %v", r, err)
		}
		seed.AddTargets("job-1", ledger.TargetPublished, "evt-1", "evt-2")
		seed.AddTargets("job-1", ledger.TargetCompleted, "evt-3")
		n, err := store.JobTargetsSetOutcome(t.Context(), "job-1", ledger.TargetFailed, []ledger.TargetOutcome{
			{EventID: "evt-1", Detail: "dead-lettered"}, {EventID: "evt-3", Detail: "dead-lettered"}, {EventID: "evt-9"}})
		if err != nil || n != 1 {
			t.Fatalf("set outcome: %d, %v; want the published target only", n, err)
		}
		if got := seed.TargetStatuses("job-1"); got["evt-1"] != ledger.TargetFailed || got["evt-2"] != ledger.TargetPublished || got["evt-3"] != ledger.TargetCompleted {
			t.Errorf("targets %v", got)
		}
		if _, err := store.JobTargetsSetOutcome(t.Context(), "job-1", ledger.TargetCompleted, nil); err == nil {
			t.Error("a status other than skipped or failed was accepted")
		}
	})
	t.Run("fingerprint algorithms read back the last registered first, and a clash is refused", func(t *testing.T) {
		store, _ := open(t)
		for _, alg := range []string{"canonical-json-v1", "sha256-canon-v2", "canonical-json-v1"} {
			if err := store.FingerprintAlgorithmRegister(t.Context(), "billing", alg, "{}"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Millisecond)
		}
		algs, err := store.FingerprintAlgorithms(t.Context(), "billing")
		if err != nil || len(algs) != 2 || algs[0].Algorithm != "canonical-json-v1" || !algs[0].LastRegisteredAt.After(algs[0].FirstRegisteredAt) {
			t.Fatalf("algorithms %+v, %v; want canonical-json-v1 first, registered twice", algs, err)
		}
		if err := store.FingerprintAlgorithmRegister(t.Context(), "billing", "sha256-canon-v2", `{"ignore":["a"]}`); !errors.Is(err, ledger.ErrFingerprintOptionsClash) {
			t.Errorf("other options under a registered name: %v", err)
		}
	})
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
