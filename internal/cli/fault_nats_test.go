package cli

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/slowtest"
)

// natsDown is how long a restarted server stays down: longer than a reconnect attempt (100ms for
// the test's connection, 2s apart for replayctl's), shorter than any timeout that would give up.
const natsDown = 1500 * time.Millisecond

// assertReconnected fails unless the test's own connection saw the server go away and come back,
// so a test that passes is known to have restarted the server under the run.
func (w *execWorld) assertReconnected(t *testing.T) {
	t.Helper()
	if got := w.NATS.Conn.Stats().Reconnects; got == 0 {
		t.Error("the test's NATS connection never reconnected: the server was not restarted under the run")
	}
}

func TestFaultNATSRestartDuringExecute(t *testing.T) {
	slowtest.Require(t)
	// Waits on timeouts and restarts in a world of its own: runs beside the others.
	t.Parallel()
	const n = 300
	w := newFaultWorld(t)
	m := w.Shadowed(n, "job-fault-nats-exec")
	w.RunConsumer(w.NewConsumer(nil, nil))

	p := startReplayctl(t, w.executeArgs("--rate", "100")...)
	w.waitCompleted(t, p, m, 50)
	if published := w.StreamMessages(); published >= n {
		t.Fatalf("all %d targets were published before the restart; want it mid-run", published)
	}
	w.NATS.Restart(t, natsDown)
	code, output := p.wait(t, 60*time.Second), p.outputOf()
	if code == cmdutil.ExitFailure {
		// Stopping is allowed if it says so; the rerun must then finish the job.
		if want := lacking(p.stderr.String(), "execute of job "+m.ID+" stopped after publishing", "run `replayctl execute` on its manifest again"); want != "" {
			t.Errorf("the stopped executor's error lacks %q:\n%s", want, output)
		}
		t.Logf("the executor stopped on the restart: %s", p.stderr.String())
		var stdout, stderr string
		stdout, stderr, code = w.replayctl(t, "execute --yes "+w.ManifestPath())
		output = "stdout:\n" + stdout + "\nstderr:\n" + stderr
	} else {
		t.Log("the executor rode through the restart")
	}
	if code != cmdutil.ExitOK {
		t.Fatalf("execute exited %d, want 0:\n%s", code, output)
	}
	w.assertReconnected(t)
	w.assertChargedOnce(t, n)
	if s := w.JobStatus(m.ID); s != "completed" {
		t.Errorf("job %s, want completed", s)
	}
	counts, err := w.Store.JobTargetsCount(w.Ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if counts["completed"] != n {
		t.Errorf("job_targets %v, want %d completed", counts, n)
	}
	if c := w.EffectCounts(m); c.Completed != n || c.Uncertain != 0 || c.Processing != 0 {
		t.Errorf("ledger rows of the job %+v, want %d completed and nothing else", c, n)
	}
}

func TestFaultNATSRestartDuringShadow(t *testing.T) {
	slowtest.Require(t)
	// Waits on timeouts and restarts in a world of its own: runs beside the others.
	t.Parallel()
	const n = 300
	w := newFaultWorld(t)
	w.Seed(n)
	m := w.Plan("job-fault-nats-shadow")
	answered := w.slowShadowResponder(t)
	shadowArgs := "shadow " + w.ManifestPath() + " --concurrency 2"
	p := w.startSlowShadow(t, answered, w.DatabaseURL)
	w.NATS.Restart(t, natsDown)
	switch code := p.wait(t, 60*time.Second); code {
	case cmdutil.ExitOK:
		t.Logf("shadow rode through the restart (%d requests answered)", answered.Load())
	case cmdutil.ExitFailure, cmdutil.ExitGuardStopped:
		// A pass that broke off, or a verdict failed by requests lost in the restart, must say so;
		// shadowing again replaces the outcomes and must pass.
		wants := []string{"shadow of job " + m.ID + " stopped before its verdict", "no verdict was recorded", "run `replayctl shadow` on its manifest again"}
		if code == cmdutil.ExitGuardStopped {
			wants = []string{"shadow verdict for job " + m.ID + ": fail", "went unanswered"}
		}
		if want := lacking(p.stderr.String(), wants...); want != "" {
			t.Errorf("the stopped shadow's error lacks %q:\n%s", want, p.outputOf())
		}
		t.Logf("shadow exited %d on the restart:\n%s", code, p.outputOf())
		if stdout, stderr, code := w.replayctl(t, shadowArgs); code != cmdutil.ExitOK {
			t.Fatalf("shadow again after the restart: exit %d:\n%s\n%s", code, stdout, stderr)
		}
	default:
		t.Fatalf("shadow exited %d on the restart, want 0, 1 or 4:\n%s", code, p.outputOf())
	}
	w.assertReconnected(t)
	if calls := w.Provider.Calls(""); calls != 0 {
		t.Fatalf("the shadow made %d provider calls, want none", calls)
	}
	if s := w.JobStatus(m.ID); s != "shadowed" {
		t.Errorf("job %s after shadow, want shadowed", s)
	}
	v, err := w.Store.ShadowVerdictsLatest(w.Ctx, m.ID)
	if err != nil || !v.Pass || v.ManifestDigest != m.Digest {
		t.Fatalf("latest verdict %+v (%v), want a pass for %s", v, err, m.Digest)
	}
	if got := w.QueryInt(`select count(*) from job_targets where job_id = $1 and shadow_status = 'ok'`, m.ID); got != n {
		t.Errorf("%d targets shadowed ok, want all %d", got, n)
	}
	if got := w.QueryInt(`select count(*) from effects where job_id = $1`, m.ID); got != 0 {
		t.Errorf("shadow wrote %d ledger rows of the job, want none", got)
	}

	// The verdict is good for execute: every order is charged exactly once.
	w.RunConsumer(w.NewConsumer(nil, nil))
	if stdout, stderr, code := w.replayctl(t, "execute --yes "+w.ManifestPath()); code != cmdutil.ExitOK {
		t.Fatalf("execute after the shadow: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	w.assertChargedOnce(t, n)
}

func TestFaultNATSDownAtExecuteStart(t *testing.T) {
	slowtest.Require(t)
	w := newExecWorld(t)
	m := w.Shadowed(5, "job-fault-nats-down")
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d", closedPort(t))
	stdout, stderr, code := runCommand(t, false, "execute --yes "+w.ManifestPath()+" --database-url '"+w.DatabaseURL+"' --nats-url "+natsURL)
	if code != cmdutil.ExitFailure {
		t.Fatalf("exit %d, want 1:\n%s\n%s", code, stdout, stderr)
	}
	if want := lacking(stderr, "connecting to NATS at "+natsURL, "--nats-url"); want != "" {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	w.assertNothingStarted(t, m)
}

// TestReconnectIsLoggedOnceDuringExecute: issue 18. A short restart under execute is one
// timestamped line when the connection is lost and one when it is back, with how long it was
// down; nats.go's reconnect attempts in between add none.
func TestReconnectIsLoggedOnceDuringExecute(t *testing.T) {
	slowtest.Require(t)
	// Waits on timeouts and restarts in a world of its own: runs beside the others.
	t.Parallel()
	const n = 200
	w := newFaultWorld(t)
	m := w.Shadowed(n, "job-nats-reconnect-log")
	w.RunConsumer(w.NewConsumer(nil, nil))

	p := startReplayctl(t, w.executeArgs("--rate", "50")...)
	w.waitCompleted(t, p, m, 20)
	w.NATS.Restart(t, natsDown)
	waitUntil(t, 30*time.Second, "the reconnect to be logged", func() bool {
		return strings.Contains(p.stderr.String(), "NATS reconnected to")
	})
	p.wait(t, 60*time.Second)
	w.assertReconnected(t)
	stderr := p.stderr.String()
	lost := regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ NATS connection to nats://127\.0\.0\.1:\d+ lost: .+; reconnecting$`)
	back := regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ NATS reconnected to nats://127\.0\.0\.1:\d+ after (\d+(\.\d)?)s$`)
	if got := len(lost.FindAllString(stderr, -1)); got != 1 {
		t.Errorf("the lost connection is logged %d times, want once:\n%s", got, stderr)
	}
	matches := back.FindAllStringSubmatch(stderr, -1)
	if len(matches) != 1 {
		t.Fatalf("the reconnect is logged %d times, want once:\n%s", len(matches), stderr)
	}
	if down, _ := strconv.ParseFloat(matches[0][1], 64); down < natsDown.Seconds() {
		t.Errorf("reconnected after %ss, want at least the %s the server was down", matches[0][1], natsDown)
	}
}
