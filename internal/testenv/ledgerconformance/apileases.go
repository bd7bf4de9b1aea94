package ledgerconformance

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/idempotency"
	"github.com/replayctl/replayctl/keys"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

// APIStore is the middleware's store with the records' reader, to read back what it wrote.
type APIStore interface {
	idempotency.Store
	keys.Records
}

// APILeases checks idempotency.Store: the claim, its leases, completions and marks, each a
// compare-and-set. open returns an empty store of its own for each subtest and its seeder.
func APILeases(t *testing.T, open func(t *testing.T) (APIStore, APIRecordsSeeder)) {
	const charges = "POST /v1/charges"
	hash := func(name string) string { return apikey.HashKey([]byte("secret"), name) }
	keyOf := func(name string) apikey.Key {
		return apikey.Key{ScopeHash: apikey.ScopeHash("t", "p", charges), KeyHash: hash(name)}
	}
	// claim is the claim of name's record by owner with the fingerprint ledgertest's records have.
	claim := func(name, owner string) apikey.Claim {
		return apikey.Claim{ScopeHash: apikey.ScopeHash("t", "p", charges), KeyHash: hash(name), Route: charges,
			ClientHash: apikey.ClientHash("t", "p"), RequestHash: "sha256:" + hash(name), RequestHashAlg: "sha256-canon-v2",
			Owner: owner, Lease: time.Minute}
	}
	read := func(t *testing.T, store APIStore, name string) apikey.Record {
		t.Helper()
		recs, err := store.APIKeysOfKey(t.Context(), hash(name), "")
		if err != nil || len(recs) != 1 {
			t.Fatalf("records of %s: %+v, %v", name, recs, err)
		}
		return recs[0]
	}
	t.Run("a claim inserts a leased record; a second claim loses to the live lease and reads it", func(t *testing.T) {
		store, _ := open(t)
		won, rec, err := store.APIKeysClaim(t.Context(), claim("k", "o1"))
		if err != nil || !won || rec.ScopeHash != "" {
			t.Fatalf("first claim: %v, %+v, %v; want won with no record", won, rec, err)
		}
		won, rec, err = store.APIKeysClaim(t.Context(), claim("k", "o2"))
		if err != nil || won || rec.State != apikey.StateProcessing || !rec.LeaseLive || rec.LeaseOwner != "o1" || rec.Attempts != 1 ||
			rec.Route != charges || rec.RequestHash != "sha256:"+hash("k") {
			t.Fatalf("second claim: %v, %+v, %v; want lost to o1's live lease", won, rec, err)
		}
	})
	t.Run("a claim takes over only what nobody can have acted on, with the same fingerprint", func(t *testing.T) {
		store, seed := open(t)
		seed.AddAPIKeys(ledgertest.APIKey{KeyHash: hash("received"), State: "received"},
			ledgertest.APIKey{KeyHash: hash("lapsed-before-a-call"), LeaseLapsedAgo: time.Second},
			ledgertest.APIKey{KeyHash: hash("lapsed-after-a-call"), LeaseLapsedAgo: time.Second, CallsStarted: 1},
			ledgertest.APIKey{KeyHash: hash("not-happened"), State: "uncertain", CallsStarted: 1},
			ledgertest.APIKey{KeyHash: hash("completed"), State: "completed", CallsStarted: 1},
			ledgertest.APIKey{KeyHash: hash("other-body"), State: "received", RequestHash: "sha256:another"})
		yes(t, "settle not happened")(store.APIKeysSettle(t.Context(), apikey.Settlement{Key: keyOf("not-happened"),
			Resolution: apikey.ResolutionNotHappened, Note: "look-up"}))
		for name, want := range map[string]bool{"received": true, "lapsed-before-a-call": true, "not-happened": true,
			"lapsed-after-a-call": false, "completed": false, "other-body": false} {
			won, rec, err := store.APIKeysClaim(t.Context(), claim(name, "o1"))
			if err != nil || won != want {
				t.Errorf("claim of %s: %v, %v; want %v", name, won, err, want)
			}
			if !won && rec.KeyHash != hash(name) {
				t.Errorf("claim of %s lost without reading the record: %+v", name, rec)
			}
		}
		r := read(t, store, "not-happened")
		if r.State != apikey.StateProcessing || r.LeaseOwner != "o1" || r.Attempts != 2 || r.CallsStarted != 0 || r.Resolution != "" || r.Note != "" {
			t.Errorf("taken over %+v; want o1's, a second attempt, no call, no resolution", r)
		}
	})
	t.Run("marks and heartbeats hold for the live lease's owner only", func(t *testing.T) {
		store, seed := open(t)
		seed.AddAPIKeys(ledgertest.APIKey{KeyHash: hash("lapsed"), LeaseLapsedAgo: time.Second})
		won(t, "claim")(store.APIKeysClaim(t.Context(), claim("k", "o1")))
		no(t, "another owner's call")(store.APIKeysCallStarted(t.Context(), keyOf("k"), "o2"))
		yes(t, "the owner's call")(store.APIKeysCallStarted(t.Context(), keyOf("k"), "o1"))
		yes(t, "the owner's heartbeat")(store.APIKeysHeartbeat(t.Context(), keyOf("k"), "o1", 2*time.Minute))
		if r := read(t, store, "k"); r.CallsStarted != 1 || r.LeaseRemaining <= time.Minute {
			t.Errorf("after a call and a heartbeat %+v", r)
		}
		no(t, "a call under a lapsed lease")(store.APIKeysCallStarted(t.Context(), keyOf("lapsed"), "ledgertest"))
		no(t, "a heartbeat of a lapsed lease")(store.APIKeysHeartbeat(t.Context(), keyOf("lapsed"), "ledgertest", time.Minute))
	})
	t.Run("a completion stores the response and windows, the lease lapsed or not, for its owner only", func(t *testing.T) {
		store, seed := open(t)
		seed.AddAPIKeys(ledgertest.APIKey{KeyHash: hash("lapsed"), LeaseLapsedAgo: time.Second, CallsStarted: 1})
		won(t, "claim")(store.APIKeysClaim(t.Context(), claim("k", "o1")))
		done := apikey.Completion{ScopeHash: keyOf("k").ScopeHash, KeyHash: hash("k"), Owner: "o2", Status: 201, KeyID: "k1",
			Sealed: []byte("sealed"), ExternalRef: "ch_1", ReplayWindow: time.Hour, EvidenceWindow: 3 * time.Hour}
		no(t, "another owner's completion")(store.APIKeysComplete(t.Context(), done))
		done.Owner = "o1"
		yes(t, "the owner's completion")(store.APIKeysComplete(t.Context(), done))
		r := read(t, store, "k")
		if r.State != apikey.StateCompleted || r.ResponseStatus != 201 || r.ResponseKeyID != "k1" || !bytes.Equal(r.ResponseSealed, []byte("sealed")) ||
			r.ExternalRef != "ch_1" || !r.ReplayOpen || r.LeaseOwner != "" || r.LeaseLive || r.ReplayUntil == nil || r.EvidenceUntil == nil ||
			r.EvidenceUntil.Sub(*r.ReplayUntil) != 2*time.Hour {
			t.Errorf("completed %+v", r)
		}
		done.KeyHash, done.Owner = hash("lapsed"), "ledgertest"
		yes(t, "a completion after the lease lapsed")(store.APIKeysComplete(t.Context(), done))
	})
	t.Run("a release gives the record back with no call; a mark keeps its owner without a lease", func(t *testing.T) {
		store, _ := open(t)
		won(t, "claim")(store.APIKeysClaim(t.Context(), claim("released", "o1")))
		yes(t, "call")(store.APIKeysCallStarted(t.Context(), keyOf("released"), "o1"))
		yes(t, "release")(store.APIKeysRelease(t.Context(), keyOf("released"), "o1"))
		if r := read(t, store, "released"); r.State != apikey.StateReceived || r.CallsStarted != 0 || r.LeaseOwner != "" {
			t.Errorf("released %+v", r)
		}
		won(t, "claim")(store.APIKeysClaim(t.Context(), claim("marked", "o1")))
		no(t, "another owner's mark")(store.APIKeysMarkUncertain(t.Context(), keyOf("marked"), "o2", "timeout"))
		yes(t, "mark")(store.APIKeysMarkUncertain(t.Context(), keyOf("marked"), "o1", "timeout"))
		if r := read(t, store, "marked"); r.State != apikey.StateUncertain || r.Note != "timeout" || r.LeaseOwner != "o1" || r.LeaseLive {
			t.Errorf("marked %+v", r)
		}
		no(t, "a release of an uncertain record")(store.APIKeysRelease(t.Context(), keyOf("marked"), "o1"))
	})
	t.Run("a lease lapsed after a call becomes uncertain, by key or in the look-up worker's pass", func(t *testing.T) {
		store, seed := open(t)
		seed.AddAPIKeys(ledgertest.APIKey{KeyHash: hash("lapsed"), LeaseLapsedAgo: time.Second, CallsStarted: 1},
			ledgertest.APIKey{KeyHash: hash("lapsed-before-a-call"), LeaseLapsedAgo: time.Second},
			ledgertest.APIKey{KeyHash: hash("old"), State: "uncertain", CallsStarted: 1, UpdatedAgo: time.Hour},
			ledgertest.APIKey{KeyHash: hash("new"), State: "uncertain", CallsStarted: 1},
			ledgertest.APIKey{KeyHash: hash("refund"), Route: "POST /v1/refunds", LeaseLapsedAgo: time.Second, CallsStarted: 1},
			ledgertest.APIKey{KeyHash: hash("by-key"), LeaseLapsedAgo: time.Second, CallsStarted: 2})
		no(t, "a lapse before any call")(store.APIKeysMarkLapsedUncertain(t.Context(), keyOf("lapsed-before-a-call")))
		yes(t, "a lapse after a call")(store.APIKeysMarkLapsedUncertain(t.Context(), keyOf("by-key")))
		if r := read(t, store, "by-key"); r.State != apikey.StateUncertain || !strings.Contains(r.Note, "lease lapsed") {
			t.Errorf("lapsed by key %+v", r)
		}
		lapsed, recs, err := store.APIKeysNeedingLookUp(t.Context(), []string{charges}, 30*time.Minute, 10)
		if err != nil || lapsed != 1 || hashesOf(recs) != hash("old") {
			t.Fatalf("the pass with 30m: %d lapsed, %s, %v; want 1 and the hour-old record", lapsed, hashesOf(recs), err)
		}
		_, recs, err = store.APIKeysNeedingLookUp(t.Context(), []string{charges}, 0, 2)
		if err != nil || len(recs) != 2 || recs[0].KeyHash != hash("old") {
			t.Fatalf("the pass with no wait, 2 at most: %s, %v; want the oldest first", hashesOf(recs), err)
		}
		if r := read(t, store, "refund"); r.State != apikey.StateProcessing {
			t.Errorf("another route's record was marked: %+v", r)
		}
	})
	t.Run("a record whose replay window closed is taken over or sent to review only as it was read", func(t *testing.T) {
		store, _ := open(t)
		for _, name := range []string{"closed", "open"} {
			won(t, "claim")(store.APIKeysClaim(t.Context(), claim(name, "o1")))
			window := time.Duration(0)
			if name == "open" {
				window = time.Hour
			}
			yes(t, "complete")(store.APIKeysComplete(t.Context(), apikey.Completion{ScopeHash: keyOf(name).ScopeHash,
				KeyHash: hash(name), Owner: "o1", Status: 201, Sealed: []byte("s"), ReplayWindow: window, EvidenceWindow: 2 * time.Hour}))
		}
		seen := read(t, store, "closed").UpdatedAt
		again := claim("closed", "o2")
		again.RequestHash = "sha256:new"
		no(t, "a take-over of a record read before its last change")(store.APIKeysTakeOver(t.Context(), again, seen.Add(-time.Millisecond)))
		open := claim("open", "o2")
		no(t, "a take-over inside the replay window")(store.APIKeysTakeOver(t.Context(), open, read(t, store, "open").UpdatedAt))
		yes(t, "take-over")(store.APIKeysTakeOver(t.Context(), again, seen))
		r := read(t, store, "closed")
		if r.State != apikey.StateProcessing || r.LeaseOwner != "o2" || r.RequestHash != "sha256:new" || r.ResponseSealed != nil ||
			r.ResponseStatus != 0 || r.ReplayUntil != nil || r.EvidenceUntil != nil || r.Attempts != 2 {
			t.Errorf("taken over %+v", r)
		}
		seenOpen := read(t, store, "open").UpdatedAt
		no(t, "a review of a record read before its last change")(store.APIKeysMarkReview(t.Context(), keyOf("open"), "look-up could not tell", seenOpen.Add(-time.Millisecond)))
		yes(t, "review")(store.APIKeysMarkReview(t.Context(), keyOf("open"), "look-up could not tell", seenOpen))
		if r := read(t, store, "open"); r.State != apikey.StateUncertain || r.Note != "look-up could not tell" {
			t.Errorf("sent to review %+v", r)
		}
	})
	t.Run("a late completion replaces its own owner's uncertain or reconciled verdict", func(t *testing.T) {
		store, _ := open(t)
		for _, name := range []string{"uncertain", "reconciled"} {
			won(t, "claim")(store.APIKeysClaim(t.Context(), claim(name, "o1")))
			yes(t, "mark")(store.APIKeysMarkUncertain(t.Context(), keyOf(name), "o1", "timed out"))
		}
		yes(t, "settle")(store.APIKeysSettle(t.Context(), apikey.Settlement{Key: keyOf("reconciled"),
			Resolution: apikey.ResolutionHappened, Note: "look-up", EvidenceWindow: 5 * time.Hour}))
		late := apikey.Completion{ScopeHash: keyOf("uncertain").ScopeHash, KeyHash: hash("uncertain"), Owner: "o2", Status: 201,
			ExternalRef: "ch_late", ReplayWindow: time.Hour, EvidenceWindow: 2 * time.Hour}
		if was, err := store.APIKeysCompleteLate(t.Context(), late); err != nil || was != nil {
			t.Fatalf("another owner's late completion: %+v, %v; want nothing", was, err)
		}
		late.Owner = "o1"
		was, err := store.APIKeysCompleteLate(t.Context(), late)
		if err != nil || was == nil || was.Was != apikey.StateUncertain {
			t.Fatalf("late completion: %+v, %v", was, err)
		}
		if r := read(t, store, "uncertain"); r.State != apikey.StateCompleted || r.ExternalRef != "ch_late" ||
			r.Note != "completed late by its first owner after it was uncertain (timed out)" {
			t.Errorf("completed late %+v", r)
		}
		late.KeyHash = hash("reconciled")
		was, err = store.APIKeysCompleteLate(t.Context(), late)
		if err != nil || was == nil || was.Was != apikey.StateReconciled || was.WasResolution != apikey.ResolutionHappened {
			t.Fatalf("late completion of a reconciled record: %+v, %v", was, err)
		}
		// The evidence the verdict promised is kept when it outlasts the late completion's.
		if r := read(t, store, "reconciled"); r.Resolution != "" || r.Note != "completed late by its first owner after it was reconciled happened (look-up)" ||
			r.EvidenceUntil == nil || time.Until(*r.EvidenceUntil) < 4*time.Hour {
			t.Errorf("completed late %+v; want its 5 hours of evidence kept", r)
		}
	})
	t.Run("a compacted key's new record is inserted only where the key has none", func(t *testing.T) {
		store, _ := open(t)
		yes(t, "start over")(store.APIKeysStartOverCompacted(t.Context(), claim("k", "o1")))
		no(t, "a second start over")(store.APIKeysStartOverCompacted(t.Context(), claim("k", "o2")))
		if r := read(t, store, "k"); r.State != apikey.StateProcessing || r.LeaseOwner != "o1" || !r.LeaseLive {
			t.Errorf("started over %+v", r)
		}
		yes(t, "review")(store.APIKeysReviewCompacted(t.Context(), claim("r", "o1"), "look-up could not tell"))
		no(t, "a review of a key with a record")(store.APIKeysReviewCompacted(t.Context(), claim("k", "o1"), "look-up could not tell"))
		if r := read(t, store, "r"); r.State != apikey.StateUncertain || r.Note != "look-up could not tell" || r.LeaseOwner != "" {
			t.Errorf("sent to review %+v", r)
		}
	})
}

// yes fails t unless a change reports it happened.
func yes(t *testing.T, what string) func(bool, error) {
	return func(ok bool, err error) {
		t.Helper()
		if err != nil || !ok {
			t.Fatalf("%s: %v, %v; want it done", what, ok, err)
		}
	}
}

// no fails t unless a change reports it did not happen, without an error.
func no(t *testing.T, what string) func(bool, error) {
	return func(ok bool, err error) {
		t.Helper()
		if err != nil || ok {
			t.Fatalf("%s: %v, %v; want it refused", what, ok, err)
		}
	}
}

// won fails t unless a claim won its lease.
func won(t *testing.T, what string) func(bool, apikey.Record, error) {
	return func(ok bool, _ apikey.Record, err error) {
		t.Helper()
		if err != nil || !ok {
			t.Fatalf("%s: %v, %v; want the lease", what, ok, err)
		}
	}
}
