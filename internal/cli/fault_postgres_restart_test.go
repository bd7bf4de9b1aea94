package cli

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/internal/testenv/slowtest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

// restartDown is how long the ledger's server stays down: "back within seconds".
const restartDown = 2 * time.Second

// TestFaultPostgresServerRestartedDuringExecute: the ledger's PostgreSQL server itself is stopped
// the way a crash or a failover stops it (pg_ctl -m immediate: every session of the executor and
// of the billing consumer dropped at once, connections refused) and started again 2 s later, with
// 100 of 300 targets completed at --rate 100. The server is the test's own (pgtest.StartPrivate):
// the shared one must never be restarted under other tests. The executor and the SDK ride
// through: one run, exit 0, every order charged exactly once, none uncertain.
func TestFaultPostgresServerRestartedDuringExecute(t *testing.T) {
	slowtest.Require(t)
	// Waits on timeouts and restarts in a world of its own: runs beside the others.
	t.Parallel()
	const n = 300
	pg := pgtest.StartPrivate(t)
	e := exectest.New(t, exectest.Options{Listen: true, DatabaseURL: pg.URL()})
	w := &execWorld{Env: e, flags: "--database-url '" + e.DatabaseURL + "' --nats-url " + e.NATS.Server.ClientURL() + " --actor alice"}
	m := w.Shadowed(n, "job-fault-pg-restart")
	w.logLedgerOnFailure(t, m)
	// The consumer's 10 s lease outlasts the outage, so a handler mid-call keeps it: a lease that
	// lapsed while the ledger was down would make its row uncertain, as the safety rule says.
	w.RunConsumer(w.NewConsumer(nil, nil))

	p := startReplayctl(t, w.executeArgs("--rate", "100")...)
	started := time.Now()
	w.waitCompleted(t, p, m, 100)
	pg.Stop(t)
	stopped := time.Now()
	time.Sleep(restartDown)
	pg.Start(t)
	up := time.Now()
	probe := pgtest.Pool(t, pgtest.LedgerAt(t, pg.URL()))
	waitUntil(t, 60*time.Second, "an outcome to land after the restart", func() bool {
		if !p.running() {
			t.Fatalf("the executor exited after the restart, want it to ride through:\n%s", p.outputOf())
		}
		return completedSince(probe, m, up) > 0
	})
	recovered := time.Now()
	code := p.wait(t, 90*time.Second)
	t.Logf("down %s; first outcome %s after the server was back (%s after the stop); run %s in all",
		up.Sub(stopped).Round(time.Millisecond), recovered.Sub(up).Round(time.Millisecond),
		recovered.Sub(stopped).Round(time.Millisecond), time.Since(started).Round(time.Millisecond))
	if uncertain := w.assertSettledOnce(t, m, n); len(uncertain) > 0 {
		t.Errorf("uncertain after the restart: %v; every charge's outcome should have been recorded once the server was back", uncertain)
	}
	if code != cmdutil.ExitOK {
		t.Fatalf("the executor exited %d, want 0:\n%s", code, p.outputOf())
	}
	if s := w.JobStatus(m.ID); s != "completed" {
		t.Errorf("job %s, want completed", s)
	}
	t.Logf("execute.lock_retaken audit entries: %d", w.auditCount(t, m.ID, func(a ledger.AuditEntry) bool { return a.Action == "execute.lock_retaken" }))
}

// completedSince counts m's targets completed at or after since, 0 while the ledger cannot be read.
func completedSince(probe *pgxpool.Pool, m *manifest.Manifest, since time.Time) int64 {
	var n int64
	err := probe.QueryRow(context.Background(), `select count(*) from effects
		where consumer = $1 and effect_version = $2 and job_id = $3 and state = 'completed' and updated_at >= $4`,
		m.Consumer, m.EffectVersion.To, m.ID, since).Scan(&n)
	if err != nil {
		return 0
	}
	return n
}
