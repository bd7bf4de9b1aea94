package cli

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/internal/testenv/slowtest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

// sessionsTag names one test's PostgreSQL sessions of one role (application_name), so the test
// kills its own connections and never those of tests running beside it on the same server.
func sessionsTag(role string) string {
	return fmt.Sprintf("replayctl-fault-%08x-%s", rand.Uint32(), role)
}

// withApplicationName adds application_name to a pgtest URL (a postgres:// URL or a DSN).
func withApplicationName(databaseURL, name string) string {
	if !strings.HasPrefix(databaseURL, "postgres://") && !strings.HasPrefix(databaseURL, "postgresql://") {
		return databaseURL + " application_name=" + name
	}
	return databaseURL + "&application_name=" + name
}

// killSessions terminates every backend named one of tags, from the test's own pool, and returns
// how many it terminated.
func (w *execWorld) killSessions(tags ...string) int64 {
	return w.QueryInt(`select count(*) filter (where pg_terminate_backend(pid)) from pg_stat_activity
		where datname = current_database() and pid <> pg_backend_pid() and application_name = any($1)`, tags)
}

// lockHolder is the backend named tag that holds an advisory lock (the executor's or shadow's job
// lock, while its working connections come and go), 0 when none does.
func (w *execWorld) lockHolder(tag string) int64 {
	return w.QueryInt(`select coalesce(min(a.pid), 0) from pg_stat_activity a
		where a.datname = current_database() and a.application_name = $1
		  and exists (select from pg_locks l where l.pid = a.pid and l.locktype = 'advisory' and l.granted)`, tag)
}

// killLockSession terminates the lock holder named tag and returns its pid.
func (w *execWorld) killLockSession(t *testing.T, tag string) int64 {
	t.Helper()
	pid := w.lockHolder(tag)
	if pid == 0 {
		t.Fatalf("no session named %s holds a lock", tag)
	}
	if w.QueryInt(`select pg_terminate_backend($1::int)::int`, pid) != 1 {
		t.Fatalf("could not terminate backend %d", pid)
	}
	return pid
}

// waitLockRetaken waits until a session named tag other than the killed one holds the lock again.
func (w *execWorld) waitLockRetaken(t *testing.T, tag string, killed int64) {
	t.Helper()
	waitUntil(t, 5*time.Second, "the lock to be taken again on a new connection", func() bool {
		pid := w.lockHolder(tag)
		return pid != 0 && pid != killed
	})
}

// taggedConsumer runs the billing consumer on a store of its own whose sessions are named tag,
// with a 3 s lease, so a row left uncertain by a killed connection settles in seconds.
func (w *execWorld) taggedConsumer(t *testing.T, tag string) {
	t.Helper()
	store, err := ledger.Open(w.Ctx, withApplicationName(w.DatabaseURL, tag))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	w.RunConsumer(w.NewConsumer(nil, func(c *consumer.Config) { c.Store, c.Lease = store, 3*time.Second }))
}

// taggedExecuteArgs is executeArgs with the executor's sessions named tag.
func (w *execWorld) taggedExecuteArgs(tag string, extra ...string) []string {
	args := w.executeArgs(extra...)
	for i, a := range args {
		if a == w.DatabaseURL {
			args[i] = withApplicationName(a, tag)
		}
	}
	return args
}

// assertSettledOnce checks every target of m against the provider after a run that may have
// left targets uncertain: no order charged twice, a completed target's order charged exactly
// once, an uncertain one at most once (its call may have failed before reaching the provider),
// none still open. It returns the uncertain event IDs.
func (w *execWorld) assertSettledOnce(t *testing.T, m *manifest.Manifest, n int) []string {
	t.Helper()
	if dups := w.DuplicateCharges(); len(dups) > 0 {
		t.Errorf("duplicate external effects: %v", dups)
	}
	states := map[string]string{}
	rows, err := w.DB.Query(w.Ctx, `select event_id, state from effects where consumer = $1 and effect_version = $2 and job_id = $3`,
		m.Consumer, m.EffectVersion.To, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, state string
		if err := rows.Scan(&id, &state); err != nil {
			t.Fatal(err)
		}
		states[id] = state
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var uncertain []string
	for i := range n {
		id, order := exectest.EventID(i), exectest.Order(i).OrderID
		switch charges := w.Provider.Charges(order); states[id] {
		case "completed":
			if charges != 1 {
				t.Errorf("%s completed with %s charged %d times, want once", id, order, charges)
			}
		case "uncertain":
			uncertain = append(uncertain, id)
		default:
			t.Errorf("%s is %q in the ledger after the run, want completed or uncertain (%s charged %d times)", id, states[id], order, charges)
		}
	}
	return uncertain
}

func TestFaultPostgresConnectionsKilledDuringExecute(t *testing.T) {
	slowtest.Require(t)
	// Waits on timeouts and restarts in a world of its own: runs beside the others.
	t.Parallel()
	const n = 300
	w := newExecWorld(t)
	m := w.Shadowed(n, "job-fault-pg-kill")
	w.logLedgerOnFailure(t, m)
	execTag, consumerTag := sessionsTag("execute"), sessionsTag("consumer")
	w.taggedConsumer(t, consumerTag)

	// Kill every connection of the executor and the consumer three times. Their ledger writes are
	// idempotent and sent again on a new connection, so the run rides through: before they were,
	// a kill stopped the executor (exit 1, "run execute again") and left 1-2 charged orders
	// uncertain whose completion write it had cut.
	p := startReplayctl(t, w.taggedExecuteArgs(execTag, "--rate", "100")...)
	for _, at := range []int64{50, 120, 200} {
		waitUntil(t, 60*time.Second, fmt.Sprintf("%d targets to complete", at), func() bool {
			if !p.running() {
				t.Fatalf("the executor exited before %d targets completed, want it to ride through the killed sessions:\n%s", at, p.outputOf())
			}
			return w.EffectCounts(m).Completed >= at
		})
		if killed := w.killSessions(execTag, consumerTag); killed == 0 {
			t.Fatalf("no session of the executor or the consumer to kill at %d completed", at)
		}
	}
	code := p.wait(t, 60*time.Second)
	if uncertain := w.assertSettledOnce(t, m, n); len(uncertain) > 0 {
		t.Errorf("uncertain after killed sessions: %v; every charge's outcome should have been recorded on a new connection", uncertain)
	}
	if code != cmdutil.ExitOK {
		t.Fatalf("the executor exited %d, want 0:\n%s", code, p.outputOf())
	}
	if s := w.JobStatus(m.ID); s != "completed" {
		t.Errorf("job %s, want completed", s)
	}
}

// TestFaultPostgresSessionsKilledAroundTheFinishExecuteExits0: the executor's sessions are
// terminated every 300 ms (the rate the issue found it at) from mid-run until it exits, so its last polls, the transaction that
// completes the job and the final report all meet dead connections. Before the final report was
// read with the connection-lost retry, execute printed the job as executing and exited 1 while the
// ledger said completed, and a rerun was refused (3, already completed).
func TestFaultPostgresSessionsKilledAroundTheFinishExecuteExits0(t *testing.T) {
	slowtest.Require(t)
	const n = 100
	w, m := newShadowedWorld(t, n, "job-fault-pg-finish")
	w.logLedgerOnFailure(t, m)
	execTag := sessionsTag("execute")
	p := startReplayctl(t, w.taggedExecuteArgs(execTag, "--rate", "100")...)
	w.waitCompleted(t, p, m, n/2)
	var killed int64
	deadline := time.Now().Add(60 * time.Second)
	for p.running() && time.Now().Before(deadline) {
		killed += w.killSessions(execTag)
		time.Sleep(300 * time.Millisecond)
	}
	code := p.wait(t, 10*time.Second)
	t.Logf("terminated %d sessions of the executor", killed)
	if code != cmdutil.ExitOK {
		t.Fatalf("the executor exited %d, want 0 (the ledger says the job is %s):\n%s", code, w.JobStatus(m.ID), p.outputOf())
	}
	if s := w.JobStatus(m.ID); s != "completed" {
		t.Errorf("job %s, want completed", s)
	}
	if want := lacking(p.stdout.String(), "completed\t100"); want != "" {
		t.Errorf("the final report lacks %q:\n%s", want, p.outputOf())
	}
	if got := w.auditCount(t, m.ID, func(a ledger.AuditEntry) bool { return a.Action == "execute.completed" }); got != 1 {
		t.Errorf("%d execute.completed audit entries, want 1", got)
	}
	w.assertChargedOnce(t, n)
}

// taggedExecutorRunning starts an executor of an n-target job at 50 targets/s, its sessions named
// execTag, and returns once 20 targets completed.
func taggedExecutorRunning(t *testing.T, n int, jobID string) (*execWorld, *manifest.Manifest, *replayctlProcess, string) {
	t.Helper()
	w, m := newShadowedWorld(t, n, jobID)
	execTag := sessionsTag("execute")
	p := startReplayctl(t, w.taggedExecuteArgs(execTag, "--rate", "50")...)
	w.waitCompleted(t, p, m, 20)
	return w, m, p, execTag
}

// TestFaultPostgresLockConnectionKilledExecutorTakesItBack: PostgreSQL drops a session lock with
// its session, silently. Before the executor checked its lock, a run whose lock connection was
// terminated went on publishing while `status` said no executor was attached, and a second
// execute of the job was let in beside it.
func TestFaultPostgresLockConnectionKilledExecutorTakesItBack(t *testing.T) {
	slowtest.Require(t)
	// Waits on timeouts and restarts in a world of its own: runs beside the others.
	t.Parallel()
	const n = 200
	w, m, p, execTag := taggedExecutorRunning(t, n, "job-fault-pg-lock")
	// Within a check interval the executor holds the lock again, on a new connection.
	w.waitLockRetaken(t, execTag, w.killLockSession(t, execTag))
	if !p.running() {
		t.Fatalf("the executor stopped when its lock connection was killed (code %d):\n%s", p.cmd.ProcessState.ExitCode(), p.outputOf())
	}
	if r := w.statusJSON(t, m.ID); !r.ExecutorAttached {
		t.Errorf("status reports no executor attached while it runs with its lock taken again")
	}
	stdout, stderr, code := w.replayctl(t, "execute --yes "+w.ManifestPath())
	if code != cmdutil.ExitGateRefused || !strings.Contains(stderr+stdout, "job "+m.ID+" is being executed by another replayctl") {
		t.Errorf("a second execute beside the running one: exit %d, want 3 naming the job:\n%s\n%s", code, stdout, stderr)
	}
	if code := p.wait(t, 60*time.Second); code != cmdutil.ExitOK {
		t.Fatalf("the executor exited %d, want 0:\n%s", code, p.outputOf())
	}
	w.assertChargedOnce(t, n)
	retaken := w.auditCount(t, m.ID, func(a ledger.AuditEntry) bool { return a.Action == "execute.lock_retaken" })
	if retaken != 1 {
		t.Errorf("%d execute.lock_retaken audit entries, want 1", retaken)
	}
}

// TestFaultPostgresLockTakenWhileLostStopsTheExecutor: when another session takes the job's lock
// in the moment the executor's lock connection is gone, the executor must stop publishing, not
// run beside whoever holds it now.
func TestFaultPostgresLockTakenWhileLostStopsTheExecutor(t *testing.T) {
	slowtest.Require(t)
	// Waits on timeouts and restarts in a world of its own: runs beside the others.
	t.Parallel()
	const n = 200
	w, m, p, execTag := taggedExecutorRunning(t, n, "job-fault-pg-lock-taken")
	var release func()
	for attempt := 1; release == nil; attempt++ {
		killed := w.killLockSession(t, execTag)
		// The lock is free once the killed backend has exited, not when the kill returns.
		waitUntil(t, 5*time.Second, "the killed backend to exit", func() bool {
			return w.QueryInt(`select count(*) from pg_stat_activity where pid = $1`, killed) == 0
		})
		var err error
		release, err = w.Store.ExecuteLock(w.Ctx, m.ID)
		// The executor may have checked its lock between the kill and the take: try again.
		if err != nil && (!errors.Is(err, ledger.ErrExecuteRunning) || attempt == 3) {
			t.Fatal(err)
		}
	}
	if code := p.wait(t, 10*time.Second); code != cmdutil.ExitFailure {
		t.Fatalf("the executor that lost its lock to another session exited %d, want 1:\n%s", code, p.outputOf())
	}
	if want := lacking(p.stderr.String(), "execute of job "+m.ID+" stopped after publishing", "because it no longer holds the job's lock",
		"job "+m.ID+" is being executed by another replayctl", "check `replayctl status "+m.ID+"`"); want != "" {
		t.Errorf("the executor's error lacks %q:\n%s", want, p.stderr.String())
	}
	if published := w.StreamMessages(); published >= n {
		t.Fatalf("all %d targets were published; want the executor stopped mid-run", published)
	}
	release()
	stdout, stderr, code := w.replayctl(t, "execute --yes "+w.ManifestPath())
	if code != cmdutil.ExitOK {
		t.Fatalf("execute again once the lock is free: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	w.assertChargedOnce(t, n)
}

// TestFaultPostgresShadowLockConnectionKilled: shadow holds its job's lock the same way execute
// does, and must take it back, or a second shadow run interleaves its outcomes with the first's.
func TestFaultPostgresShadowLockConnectionKilled(t *testing.T) {
	slowtest.Require(t)
	// Waits on timeouts and restarts in a world of its own: runs beside the others.
	t.Parallel()
	const n = 300
	w := newExecWorld(t)
	w.Seed(n)
	m := w.Plan("job-fault-pg-shadow-lock")
	tag := sessionsTag("shadow")
	p := w.startSlowShadow(t, w.slowShadowResponder(t), withApplicationName(w.DatabaseURL, tag))
	w.waitLockRetaken(t, tag, w.killLockSession(t, tag))
	if !p.running() {
		t.Fatalf("shadow stopped when its lock connection was killed:\n%s", p.outputOf())
	}
	stdout, stderr, code := w.replayctl(t, "shadow "+w.ManifestPath())
	if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "job "+m.ID+" is being shadowed by another replayctl") {
		t.Errorf("a second shadow beside the running one: exit %d, want 3 naming the job:\n%s\n%s", code, stdout, stderr)
	}
	if code := p.wait(t, 60*time.Second); code != cmdutil.ExitOK {
		t.Fatalf("shadow exited %d, want 0:\n%s", code, p.outputOf())
	}
	if got := w.QueryInt(`select count(*) from job_targets where job_id = $1 and shadow_status = 'ok'`, m.ID); got != n {
		t.Errorf("%d targets shadowed ok, want all %d", got, n)
	}
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// assertNothingStarted checks a refused or failed start changed nothing: the job is still
// shadowed, no effect version was registered, nothing was published or charged.
func (w *execWorld) assertNothingStarted(t *testing.T, m *manifest.Manifest) {
	t.Helper()
	if s := w.JobStatus(m.ID); s != "shadowed" {
		t.Errorf("job %s, want still shadowed", s)
	}
	if got := w.QueryInt(`select count(*) from effect_versions where consumer = $1 and effect_version = $2`, m.Consumer, m.EffectVersion.To); got != 0 {
		t.Errorf("effect version %d registered %d times, want none", m.EffectVersion.To, got)
	}
	if got := w.StreamMessages(); got != 0 {
		t.Errorf("%d messages published", got)
	}
	if calls := w.Provider.Calls(""); calls != 0 {
		t.Errorf("%d external calls", calls)
	}
}

func TestFaultPostgresDownAtExecuteStart(t *testing.T) {
	slowtest.Require(t)
	w := newExecWorld(t)
	m := w.Shadowed(5, "job-fault-pg-down")
	url := fmt.Sprintf("postgres://replayctl:s3cret@127.0.0.1:%d/test?connect_timeout=2", closedPort(t))
	stdout, stderr, code := runCommand(t, false, "execute --yes "+w.ManifestPath()+" --database-url '"+url+"' --nats-url "+w.NATS.Server.ClientURL())
	if code != cmdutil.ExitFailure {
		t.Fatalf("exit %d, want 1:\n%s\n%s", code, stdout, stderr)
	}
	if want := lacking(stderr, "ledger database unavailable", "127.0.0.1", "is PostgreSQL running there?", "--database-url"); want != "" {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	if strings.Contains(stdout+stderr, "s3cret") {
		t.Errorf("the password is printed:\n%s\n%s", stdout, stderr)
	}
	w.assertNothingStarted(t, m)
}
