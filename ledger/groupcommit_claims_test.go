package ledger_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

func TestGroupCommitClaimsHaveOneWinnerPerEventAcrossVersions(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	const events = 20
	claims := make([]ledger.EffectClaim, 0, 2*events)
	for e := range events {
		for _, version := range []int{1, 2} {
			claims = append(claims, ledger.EffectClaim{
				Key:         ledger.EffectKey{Consumer: "billing", EventID: fmt.Sprintf("evt-%02d", e), EffectVersion: version},
				RequestHash: "sha256:x", RequestHashAlg: "canonical-json-v1", Owner: fmt.Sprintf("i-%d", version),
				Lease: time.Minute, AnyVersionSettles: version == 1})
		}
	}
	before := store.GroupCommitStats()
	answers := batched(t, store, "claim", len(claims), func(i int) (bool, error) {
		return store.EffectsClaim(t.Context(), claims[i])
	})
	wins := map[string]int{}
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("claim %s: %v", claims[i].Key, a.err)
		}
		if a.ok {
			wins[claims[i].Key.EventID]++
		}
	}
	for e := range events {
		if id := fmt.Sprintf("evt-%02d", e); wins[id] != 1 {
			t.Errorf("event %s has %d winners", id, wins[id])
		}
	}
	if got := queryInt(t, store, `select count(*) from effects where state = 'processing' and lease_owner is not null`); got != events {
		t.Errorf("%d rows leased, want %d", got, events)
	}
	if got := store.GroupCommitStats().Batches - before.Batches; got < 1 {
		t.Errorf("no claims were batched")
	}
}

func TestGroupCommitClaimBatchTakesOverWhatASingleClaimWould(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	// Each event's existing rows, and whether a claim of its version 1 wins.
	cases := []struct {
		event, setup string
		anyVersion   bool
		hash         string
		want         bool
	}{
		{"new", ``, true, "sha256:x", true},
		{"received", `insert into effects (consumer, event_id, effect_version, state, request_hash)
			values ('billing', 'received', 1, 'received', 'sha256:x')`, true, "sha256:x", true},
		{"lapsed-no-call", `insert into effects (consumer, event_id, effect_version, state, request_hash, lease_owner, lease_expires_at, attempts)
			values ('billing', 'lapsed-no-call', 1, 'processing', 'sha256:x', 'i-9', now() - interval '1 s', 1)`, true, "sha256:x", true},
		{"lapsed-after-call", `insert into effects (consumer, event_id, effect_version, state, request_hash, lease_owner, lease_expires_at, calls_started)
			values ('billing', 'lapsed-after-call', 1, 'processing', 'sha256:x', 'i-9', now() - interval '1 s', 1)`, true, "sha256:x", false},
		{"live", `insert into effects (consumer, event_id, effect_version, state, request_hash, lease_owner, lease_expires_at)
			values ('billing', 'live', 1, 'processing', 'sha256:x', 'i-9', now() + interval '1 min')`, true, "sha256:x", false},
		{"other-payload", `insert into effects (consumer, event_id, effect_version, state, request_hash)
			values ('billing', 'other-payload', 1, 'received', 'sha256:y')`, true, "sha256:x", false},
		{"other-version-uncertain", `insert into effects (consumer, event_id, effect_version, state, request_hash)
			values ('billing', 'other-version-uncertain', 2, 'uncertain', 'sha256:x')`, true, "sha256:x", false},
		{"other-version-completed", `insert into effects (consumer, event_id, effect_version, state, request_hash)
			values ('billing', 'other-version-completed', 2, 'completed', 'sha256:x')`, true, "sha256:x", false},
		{"other-version-completed-backfill", `insert into effects (consumer, event_id, effect_version, state, request_hash)
			values ('billing', 'other-version-completed-backfill', 2, 'completed', 'sha256:x')`, false, "sha256:x", true},
		{"completed", `insert into effects (consumer, event_id, effect_version, state, request_hash)
			values ('billing', 'completed', 1, 'completed', 'sha256:x')`, true, "sha256:x", false},
	}
	for _, c := range cases {
		if c.setup != "" {
			if _, err := store.Pool().Exec(t.Context(), c.setup); err != nil {
				t.Fatalf("%s: %v", c.event, err)
			}
		}
	}
	// A first claim of an event of its own is held, so the cases go out as one batch.
	claimOf := func(i int) ledger.EffectClaim {
		event, anyVersion, hash := "first", true, "sha256:x"
		if i > 0 {
			event, anyVersion, hash = cases[i-1].event, cases[i-1].anyVersion, cases[i-1].hash
		}
		return ledger.EffectClaim{Key: ledger.EffectKey{Consumer: "billing", EventID: event, EffectVersion: 1},
			RequestHash: hash, RequestHashAlg: "canonical-json-v1", Owner: "i-1", Lease: time.Minute, JobID: "job-1",
			AnyVersionSettles: anyVersion}
	}
	before := store.GroupCommitStats()
	answers := batched(t, store, "claim", len(cases)+1, func(i int) (bool, error) {
		return store.EffectsClaim(t.Context(), claimOf(i))
	})
	if got := store.GroupCommitStats().Statements - before.Statements; got != 2 {
		t.Errorf("%d claims took %d statements, want 2", len(cases)+1, got)
	}
	for i, c := range cases {
		a := answers[i+1]
		if a.err != nil || a.ok != c.want {
			t.Errorf("claim of %s: (%v, %v), want %v", c.event, a.ok, a.err, c.want)
		}
		leased := queryInt(t, store, `select count(*) from effects where event_id = $1 and effect_version = 1
			and state = 'processing' and lease_owner = 'i-1' and lease_expires_at > now() + interval '50 s'
			and job_id = 'job-1' and calls_started = 0`, c.event)
		if (leased == 1) != c.want {
			t.Errorf("%s: %d rows leased to the claimant", c.event, leased)
		}
	}
	if got := queryInt(t, store, `select attempts from effects where event_id = 'lapsed-no-call'`); got != 2 {
		t.Errorf("the taken-over row counts %d attempts, want 2", got)
	}
}
