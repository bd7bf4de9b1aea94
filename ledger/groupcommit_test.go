package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// claimed returns n keys, each claimed by owner with a live lease.
func claimed(t *testing.T, store *ledger.Store, n int, owner string) []ledger.EffectKey {
	t.Helper()
	keys := make([]ledger.EffectKey, n)
	for i := range keys {
		keys[i] = ledger.EffectKey{Consumer: "billing", EventID: fmt.Sprintf("evt-%03d", i), EffectVersion: 1}
		ok, err := ledger.EffectsClaim(t.Context(), store.Pool(), ledger.EffectClaim{Key: keys[i], RequestHash: "sha256:x",
			RequestHashAlg: "canonical-json-v1", Owner: owner, Lease: time.Minute})
		if err != nil || !ok {
			t.Fatalf("claim %s: %v %v", keys[i], ok, err)
		}
	}
	return keys
}

// heldBatches makes the store send one statement of kind at a time and holds the first one
// (held is closed then) until release(total) sees total requests of kind held or queued behind
// it, so the queued ones go out together as one batch.
func heldBatches(t *testing.T, store *ledger.Store, kind string) (held <-chan struct{}, release func(total int)) {
	t.Helper()
	ledger.SetGroupCommitFlushers(store, 1)
	gate, holding := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var first atomic.Int64
	ledger.SetGroupCommitBeforeSend(store, func(k string, n int) {
		if k == kind {
			once.Do(func() { first.Store(int64(n)); close(holding); <-gate })
		}
	})
	return holding, func(total int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for int(first.Load())+ledger.GroupCommitPending(store, kind) < total {
			if time.Now().After(deadline) {
				t.Fatalf("only %d+%d of %d %s requests held or queued", first.Load(), ledger.GroupCommitPending(store, kind), total, kind)
			}
			time.Sleep(time.Millisecond)
		}
		close(gate)
	}
}

type answer struct {
	ok  bool
	err error
}

// concurrently runs call(i) for each i in [0, n) at once and returns their answers.
func concurrently(n int, call func(i int) (bool, error)) []answer {
	out := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i].ok, out[i].err = call(i) })
	}
	wg.Wait()
	return out
}

// batched runs call(0), holds its statement, then runs call(1..n-1) at once so that they queue
// behind it and go out as one batch, and returns all n answers.
func batched(t *testing.T, store *ledger.Store, kind string, n int, call func(i int) (bool, error)) []answer {
	t.Helper()
	held, release := heldBatches(t, store, kind)
	out := make([]answer, n)
	firstDone := make(chan struct{})
	go func() {
		defer close(firstDone)
		out[0].ok, out[0].err = call(0)
	}()
	<-held
	rest := make(chan []answer, 1)
	go func() { rest <- concurrently(n-1, func(i int) (bool, error) { return call(i + 1) }) }()
	release(n)
	copy(out[1:], <-rest)
	<-firstDone
	return out
}

func TestGroupCommitSendsConcurrentCallStartedMarksAsOneStatement(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	const n = 32
	keys := claimed(t, store, n, "i-1")
	// One row's lease was taken over: only its caller may hear false.
	if _, err := store.Pool().Exec(t.Context(), `update effects set lease_owner = 'i-2' where event_id = $1`, keys[7].EventID); err != nil {
		t.Fatal(err)
	}
	before := store.GroupCommitStats()
	answers := batched(t, store, "call-started", n, func(i int) (bool, error) {
		return store.EffectsCallStarted(t.Context(), keys[i], "i-1", 1)
	})
	after := store.GroupCommitStats()
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("call-started %d: %v", i, a.err)
		}
		if a.ok != (i != 7) {
			t.Errorf("call-started %d answered %v", i, a.ok)
		}
	}
	if got := after.Statements - before.Statements; got != 2 {
		t.Errorf("%d call-started marks took %d statements, want 2 (the held batch, then the queued one); before %+v after %+v", n, got, before, after)
	}
	if got := queryInt(t, store, `select count(*) from effects where calls_started = 1`); got != n-1 {
		t.Errorf("%d rows record a started call, want %d", got, n-1)
	}
	if got := queryInt(t, store, `select calls_started from effects where event_id = $1`, keys[7].EventID); got != 0 {
		t.Errorf("the taken-over row records %d started calls", got)
	}
}

func TestGroupCommitDropsACallerThatGaveUpBeforeItsBatchWasSent(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	keys := claimed(t, store, 3, "i-1")
	held, release := heldBatches(t, store, "call-started")
	first := make(chan answer, 1)
	go func() {
		ok, err := store.EffectsCallStarted(t.Context(), keys[0], "i-1", 1)
		first <- answer{ok, err}
	}()
	<-held
	// keys[0] is being sent (held); keys[1]'s caller queues behind it and gives up.
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan answer, 1)
	go func() {
		ok, err := store.EffectsCallStarted(ctx, keys[1], "i-1", 1)
		gaveUp <- answer{ok, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for ledger.GroupCommitPending(store, "call-started") < 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if a := <-gaveUp; !errors.Is(a.err, context.Canceled) || a.ok {
		t.Fatalf("a caller that gave up while queued got (%v, %v), want context.Canceled", a.ok, a.err)
	}
	release(1)
	if a := <-first; a.err != nil || !a.ok {
		t.Fatalf("the held mark: (%v, %v)", a.ok, a.err)
	}
	if got := queryInt(t, store, `select calls_started from effects where event_id = $1`, keys[1].EventID); got != 0 {
		t.Errorf("the abandoned mark was written: calls_started %d", got)
	}
	if ok, err := store.EffectsCallStarted(t.Context(), keys[2], "i-1", 1); err != nil || !ok {
		t.Errorf("a mark after it: (%v, %v)", ok, err)
	}
}

func TestGroupCommitBatchesCompletionsAndHeartbeatsPerRow(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	const n = 8
	keys := claimed(t, store, n, "i-1")
	if _, err := store.Pool().Exec(t.Context(), `update effects set lease_owner = 'i-2' where event_id = $1`, keys[3].EventID); err != nil {
		t.Fatal(err)
	}

	beats := batched(t, store, "heartbeat", n, func(i int) (bool, error) {
		return store.EffectsHeartbeat(t.Context(), keys[i], "i-1", time.Hour)
	})
	for i, a := range beats {
		if a.err != nil || a.ok != (i != 3) {
			t.Errorf("heartbeat %d: (%v, %v)", i, a.ok, a.err)
		}
	}
	if got := queryInt(t, store, `select count(*) from effects where lease_expires_at > now() + interval '50 minutes'`); got != n-1 {
		t.Errorf("%d leases extended, want %d", got, n-1)
	}

	completions := batched(t, store, "complete", n, func(i int) (bool, error) {
		c := ledger.EffectCompletion{Key: keys[i], Owner: "i-1", ResultHash: fmt.Sprintf("sha256:r%d", i),
			ResultBody: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), EffectCount: 1,
			ExternalRefs:    json.RawMessage(`[{"kind":"charge","target":"a","ref":"ch"}]`),
			ResultRetention: time.Hour, EvidenceRetention: 2 * time.Hour}
		if i%2 == 1 {
			c.ResultBody, c.OutcomeKind, c.LastError, c.ExternalRefs = nil, "business", "declined", nil
		}
		return store.EffectsComplete(t.Context(), c)
	})
	for i, a := range completions {
		if a.err != nil || a.ok != (i != 3) {
			t.Errorf("completion %d: (%v, %v)", i, a.ok, a.err)
		}
	}
	if got := queryInt(t, store, `select count(*) from effects where state = 'completed' and lease_owner is null
		and result_hash = 'sha256:r' || substr(event_id, 5)::int
		and replay_until between now() + interval '59 minutes' and now() + interval '61 minutes'
		and evidence_until > now() + interval '119 minutes'
		and (case when substr(event_id, 5)::int % 2 = 1
		          then result_body is null and outcome_kind = 'business' and last_error = 'declined' and external_refs = '[]'
		               and not exists (select from effect_bodies b where b.event_id = effects.event_id)
		          else result_body is null and outcome_kind is null
		               and (select b.body from effect_bodies b where b.consumer = effects.consumer and b.event_id = effects.event_id
		                       and b.effect_version = effects.effect_version and b.replay_until = effects.replay_until)
		                   = jsonb_build_object('n', substr(event_id, 5)::int)
		               and last_error is null and jsonb_array_length(external_refs) = 1 end)`); got != n-1 {
		t.Errorf("%d rows hold their own outcome, want %d", got, n-1)
	}
	if got := queryInt(t, store, `select count(*) from effects where state = 'processing'`); got != 1 {
		t.Errorf("%d rows still processing, want the taken-over one", got)
	}
}

func TestGroupCommitRunsARefusedBatchRowByRow(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	const n = 6
	keys := claimed(t, store, n, "i-1")
	before := store.GroupCommitStats()
	answers := batched(t, store, "complete", n, func(i int) (bool, error) {
		body := json.RawMessage(`{"ok":true}`)
		if i == 4 {
			body = json.RawMessage(`{not json`)
		}
		return store.EffectsComplete(t.Context(), ledger.EffectCompletion{Key: keys[i], Owner: "i-1",
			ResultHash: "sha256:r", ResultBody: body, ResultRetention: time.Hour, EvidenceRetention: time.Hour})
	})
	if got := store.GroupCommitStats().Fallbacks - before.Fallbacks; got != 1 {
		t.Errorf("%d batches re-run row by row, want 1", got)
	}
	for i, a := range answers {
		if i == 4 {
			if a.err == nil || a.ok {
				t.Errorf("the bad row: (%v, %v), want its own error", a.ok, a.err)
			}
			continue
		}
		if a.err != nil || !a.ok {
			t.Errorf("completion %d: (%v, %v)", i, a.ok, a.err)
		}
	}
	if got := queryInt(t, store, `select count(*) from effects where state = 'completed'`); got != n-1 {
		t.Errorf("%d rows completed, want %d", got, n-1)
	}
}
