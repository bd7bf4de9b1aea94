package idempotency_test

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/idempotency"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/keys"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

// errResetAfterSend is a call failure after which nobody knows whether the provider acted.
var errResetAfterSend = errors.New("connection reset after the request was sent")

// record reads the one API record of key k through what `replayctl keys show` reads.
func (a *api) record(key string) keys.RecordView {
	a.t.Helper()
	views, err := keys.Show(a.t.Context(), a.store, keys.Lookup{RawKey: key, Secret: billing.DemoKeySecret()})
	if err != nil || len(views) != 1 {
		a.t.Fatalf("keys show %s: %v %v", key, views, err)
	}
	return views[0]
}

// uncertainWithoutCharge leaves key's record uncertain although the provider charged nothing:
// the call started and failed in a way that proves nothing.
func (a *api) uncertainWithoutCharge(key string) {
	a.t.Helper()
	a.provider.Fail = func(string, string) error { return errResetAfterSend }
	if got := a.post("demo-alice", key, order); got.status != http.StatusBadGateway {
		a.t.Fatalf("first: %d %s", got.status, got.body)
	}
	a.provider.Fail = nil
	if rec := a.record(key); rec.State != apikey.StateUncertain || rec.NextRetry.Answer != "uncertain" {
		a.t.Fatalf("after the failed call: %+v", rec)
	}
}

func TestARecordTheLookUpSettledAsNotHappenedRunsOnTheNextRetry(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.uncertainWithoutCharge("k-settled")
	rep, err := a.keeper.ReconcileOnce(t.Context(), 0)
	if err != nil || rep.NotHappened != 1 {
		t.Fatalf("reconcile: %+v %v", rep, err)
	}
	if rec := a.record("k-settled"); rec.Resolution != apikey.ResolutionNotHappened || rec.NextRetry.Answer != "runs" {
		t.Fatalf("keys show after the look-up: %s (%s), next retry %+v", rec.State, rec.Resolution, rec.NextRetry)
	}
	got := a.post("demo-alice", "k-settled", order)
	if got.status != http.StatusCreated || a.provider.Calls(billing.EffectCharge) != 1 {
		t.Fatalf("retry after not_happened: %d %s, charges %d", got.status, got.body, a.provider.Calls(billing.EffectCharge))
	}
	if again := a.post("demo-alice", "k-settled", order); again.header.Get(idempotency.ReplayedHeader) != "true" || a.provider.Calls(billing.EffectCharge) != 1 {
		t.Fatalf("the retry after it: %d, charges %d", again.status, a.provider.Calls(billing.EffectCharge))
	}
	if rec := a.record("k-settled"); rec.NextRetry.Answer != "replayed" || rec.NextRetry.Status != http.StatusCreated {
		t.Fatalf("keys show once completed: %+v", rec.NextRetry)
	}
}

func TestARecordAPersonResolvedAsNotHappenedRunsOnTheNextRetry(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.uncertainWithoutCharge("k-resolved")
	_, err := keys.Resolve(t.Context(), a.store, keys.ResolveRequest{
		Lookup: keys.Lookup{RawKey: "k-resolved", Secret: billing.DemoKeySecret()},
		As:     apikey.ResolutionNotHappened, Note: "no charge at the provider's dashboard", Actor: "oncall"})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.post("demo-alice", "k-resolved", order); got.status != http.StatusCreated || a.provider.Calls(billing.EffectCharge) != 1 {
		t.Fatalf("retry after keys resolve --as not_happened: %d %s, charges %d", got.status, got.body, a.provider.Calls(billing.EffectCharge))
	}
}

// frozenCall makes the first charge of the provider stop before it reaches the provider, as a
// process stopped with SIGSTOP between its call-started mark and its provider call would; the
// returned func lets it go on.
func (a *api) frozenCall() (entered <-chan struct{}, thaw func()) {
	in, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	a.provider.Fail = func(kind, _ string) error {
		first := false
		once.Do(func() { first = true })
		if first && kind == billing.EffectCharge {
			close(in)
			<-release
		}
		return nil
	}
	var thawOnce sync.Once
	thaw = func() { thawOnce.Do(func() { close(release) }) }
	// A test that fails before it thaws must not leave the handler (and the server's Close) waiting.
	a.t.Cleanup(thaw)
	return in, thaw
}

// lapse ends every lease now, as a frozen process's stopped heartbeat would once the lease ran
// out; a heartbeat never revives a lapsed lease.
func (a *api) lapse() {
	ledgertest.LapseKeyLeases(a.t, a.pool)
}

func TestACallThatResumesAfterTheLookUpSaidNotHappenedCorrectsTheVerdictAndIsChargedOnce(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	a := newAPI(t, apiOptions{metrics: reg})
	entered, thaw := a.frozenCall()
	first := make(chan answer, 1)
	go func() { first <- a.post("demo-alice", "k-frozen", order) }()
	<-entered
	a.lapse()
	if got := a.post("demo-alice", "k-frozen", order); got.status != http.StatusServiceUnavailable {
		t.Fatalf("retry while the first is frozen: %d %s", got.status, got.body)
	}
	rep, err := a.keeper.ReconcileOnce(t.Context(), 0)
	if err != nil || rep.NotHappened != 1 {
		t.Fatalf("the look-up while the first is frozen: %+v %v", rep, err)
	}
	thaw()
	got := <-first
	if got.status != http.StatusCreated {
		t.Fatalf("the frozen first, resumed: %d %s", got.status, got.body)
	}
	rec := a.record("k-frozen")
	if rec.State != apikey.StateCompleted || !strings.Contains(rec.Note, "completed late") || !strings.Contains(rec.Note, "not_happened") {
		t.Fatalf("after the late completion: %s (%s) %q", rec.State, rec.Resolution, rec.Note)
	}
	if n := lateCompletions(t, reg, "reconciled_not_happened"); n != 1 {
		t.Fatalf("late completions counted %v, want 1", n)
	}
	again := a.post("demo-alice", "k-frozen", order)
	if again.header.Get(idempotency.ReplayedHeader) != "true" || string(again.body) != string(got.body) || a.provider.Calls(billing.EffectCharge) != 1 {
		t.Fatalf("retry after the late completion: %d %s, charges %d", again.status, again.body, a.provider.Calls(billing.EffectCharge))
	}
}

// lateCompletions reads idempotency_api_late_completions_total{was=was} from reg.
func lateCompletions(t *testing.T, reg *prometheus.Registry, was string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if f.GetName() == "idempotency_api_late_completions_total" && l.GetName() == "was" && l.GetValue() == was {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestARetryThatRunsWhileTheFrozenCallIsStillOutIsChargedOnceByTheOperationID(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	entered, thaw := a.frozenCall()
	first := make(chan answer, 1)
	go func() { first <- a.post("demo-alice", "k-race", order) }()
	<-entered
	a.lapse()
	a.post("demo-alice", "k-race", order)
	if rep, err := a.keeper.ReconcileOnce(t.Context(), 0); err != nil || rep.NotHappened != 1 {
		t.Fatalf("the look-up: %+v %v", rep, err)
	}
	// The look-up let the next retry run while the first call is still on its way.
	second := a.post("demo-alice", "k-race", order)
	if second.status != http.StatusCreated {
		t.Fatalf("the retry the look-up let through: %d %s", second.status, second.body)
	}
	thaw()
	resumed := <-first
	if resumed.status != http.StatusCreated || a.provider.Calls(billing.EffectCharge) != 1 || a.provider.Charges(order.OrderID) != 1 {
		t.Fatalf("the frozen first, resumed: %d %s; charges %d", resumed.status, resumed.body, a.provider.Calls(billing.EffectCharge))
	}
	var r1, r2 struct{ ChargeID string }
	_ = jsonUnmarshal(resumed.body, &r1)
	_ = jsonUnmarshal(second.body, &r2)
	if r1.ChargeID == "" || r1.ChargeID != r2.ChargeID {
		t.Fatalf("two answers name two charges: %q and %q", r1.ChargeID, r2.ChargeID)
	}
}

func TestOneOrderThroughTwoKeysIsChargedOnce(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	first := a.post("demo-alice", "k-order-1", order)
	if first.status != http.StatusCreated {
		t.Fatalf("first key: %d %s", first.status, first.body)
	}
	var charge struct{ ChargeID string }
	_ = jsonUnmarshal(first.body, &charge)
	for _, c := range []struct{ token, key string }{{"demo-alice", "k-order-2"}, {"demo-bob", "k-order-1"}} {
		got := a.post(c.token, c.key, order)
		var refused struct{ ChargeID string }
		_ = jsonUnmarshal(got.body, &refused)
		if got.status != http.StatusConflict || refused.ChargeID != charge.ChargeID {
			t.Errorf("%s with key %s: %d %s, want 409 naming %s", c.token, c.key, got.status, got.body, charge.ChargeID)
		}
		// The refusal is the key's stored answer: its retry gets it again, never a charge.
		if again := a.post(c.token, c.key, order); again.status != http.StatusConflict || again.header.Get(idempotency.ReplayedHeader) != "true" {
			t.Errorf("retry of %s: %d", c.key, again.status)
		}
	}
	if n := a.provider.Charges(order.OrderID); n != 1 {
		t.Fatalf("order charged %d times through two keys", n)
	}
}
