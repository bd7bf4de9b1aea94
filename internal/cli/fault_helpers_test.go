package cli

import (
	"context"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

// newFaultWorld is newExecWorld on a NATS server the test can restart in place
// (natstest.StartRestartable): same port, same store, so clients reconnect and find their
// streams, messages and durables.
func newFaultWorld(t *testing.T) *execWorld {
	t.Helper()
	e := exectest.New(t, exectest.Options{Listen: true, Restartable: true})
	return &execWorld{Env: e,
		flags: "--database-url '" + e.DatabaseURL + "' --nats-url " + e.NATS.Server.ClientURL() + " --actor alice"}
}

// outputOf is a subprocess's streams, for a failure message.
func (p *replayctlProcess) outputOf() string {
	return "stdout:\n" + p.stdout.String() + "\nstderr:\n" + p.stderr.String()
}

// lacking reports the first of wants that s lacks, or "" when s has them all.
func lacking(s string, wants ...string) string {
	for _, w := range wants {
		if !strings.Contains(s, w) {
			return w
		}
	}
	return ""
}

// slowShadowResponder serves the billing consumer's shadow responder until the test ends, 10ms a
// request, so a shadow pass at --concurrency 2 lasts seconds and a fault lands mid-pass. It
// returns the count of requests answered.
func (w *execWorld) slowShadowResponder(t *testing.T) *atomic.Int64 {
	t.Helper()
	var answered atomic.Int64
	handle := billing.Handler(w.Provider, time.Now)
	responder := w.NewConsumer(func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		answered.Add(1)
		time.Sleep(10 * time.Millisecond)
		return handle(ctx, ev, fx)
	}, nil)
	stop, err := responder.ServeShadow(w.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return &answered
}

// startSlowShadow runs `replayctl shadow --concurrency 2` on the world's manifest in a subprocess,
// with databaseURL, and returns once 50 requests were answered and it still runs.
func (w *execWorld) startSlowShadow(t *testing.T, answered *atomic.Int64, databaseURL string) *replayctlProcess {
	t.Helper()
	p := startReplayctl(t, "shadow", w.ManifestPath(), "--concurrency", "2", "--actor", "alice",
		"--database-url", databaseURL, "--nats-url", w.NATS.Server.ClientURL())
	waitUntil(t, 30*time.Second, "50 shadow requests answered", func() bool {
		if !p.running() {
			t.Fatalf("shadow exited early:\n%s", p.outputOf())
		}
		return answered.Load() >= 50
	})
	return p
}

// logLedgerOnFailure logs, when the test fails, how m's targets and effects rows stand, so a
// hang says which state the unsettled targets are stuck in.
func (w *execWorld) logLedgerOnFailure(t *testing.T, m *manifest.Manifest) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		rows, err := w.DB.Query(context.Background(), `
			select t.status, coalesce(e.state, '-'), coalesce(e.outcome_kind, '-'), count(*), min(t.event_id),
			       coalesce(min(e.last_error), '') || ' ' || coalesce(string_agg(e.event_id || ' lease ' || coalesce(e.lease_owner, '-') || ' live ' ||
			       coalesce((e.lease_expires_at > now())::text, '-') || ' calls ' || e.calls_started || ' updated ' || e.updated_at, '; ')
			       filter (where e.state = 'processing'), '')
			  from job_targets t
			  left join effects e on e.consumer = $2 and e.event_id = t.event_id and e.effect_version = $3
			 where t.job_id = $1 group by 1, 2, 3 order by 1, 2, 3`, m.ID, m.Consumer, m.EffectVersion.To)
		if err != nil {
			t.Logf("reading the ledger: %v", err)
			return
		}
		defer rows.Close()
		for rows.Next() {
			var status, state, kind, first, lastErr string
			var n int64
			if err := rows.Scan(&status, &state, &kind, &n, &first, &lastErr); err != nil {
				t.Logf("reading the ledger: %v", err)
				return
			}
			t.Logf("target %s, effect %s/%s: %d (first %s) %s", status, state, kind, n, first, lastErr)
		}
		var stacks strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		for _, g := range strings.Split(stacks.String(), "\n\n") {
			if strings.Contains(g, "replayctl/consumer.") {
				t.Logf("consumer goroutine:\n%s", g)
			}
		}
	})
}

// auditCount counts the audit entries of job jobID that match.
func (w *execWorld) auditCount(t *testing.T, jobID string, match func(ledger.AuditEntry) bool) int {
	t.Helper()
	entries, err := w.Store.AuditList(w.Ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range entries {
		if match(a) {
			n++
		}
	}
	return n
}
