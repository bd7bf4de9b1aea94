package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/slowtest"
	"github.com/replayctl/replayctl/ledger"
)

// refusedAsSecondExecutor checks p was refused by the one-executor-per-job gate, naming the job.
func refusedAsSecondExecutor(t *testing.T, p *replayctlProcess, jobID string) {
	t.Helper()
	if code := p.wait(t, 30*time.Second); code != cmdutil.ExitGateRefused {
		t.Fatalf("the second executor exited %d, want 3:\n%s", code, p.outputOf())
	}
	if want := lacking(p.stderr.String(), "one-executor-per-job", "job "+jobID+" is being executed by another replayctl",
		"replayctl pause "+jobID); want != "" {
		t.Errorf("the second executor's error lacks %q:\n%s", want, p.outputOf())
	}
}

func TestFaultSecondExecutorOfARunningJobIsRefused(t *testing.T) {
	slowtest.Require(t)
	const n = 200
	w, m := newShadowedWorld(t, n, "job-fault-two")

	first := startReplayctl(t, w.executeArgs("--rate", "100")...)
	w.waitCompleted(t, first, m, 20)
	second := startReplayctl(t, w.executeArgs()...)
	refusedAsSecondExecutor(t, second, m.ID)
	if !first.running() {
		t.Fatalf("the first executor stopped when the second was refused:\n%s", first.outputOf())
	}
	if code := first.wait(t, 60*time.Second); code != cmdutil.ExitOK {
		t.Fatalf("the first executor exited %d, want 0:\n%s", code, first.outputOf())
	}
	w.assertChargedOnce(t, n)
	// The refused executor published nothing: every message on the stream is the first one's.
	if got := w.StreamMessages(); got != n {
		t.Errorf("%d messages on the billing stream, want %d (one per target)", got, n)
	}
	if !strings.Contains(first.stdout.String(), "of which deduplicated by JetStream\t0") {
		t.Errorf("the first executor saw JetStream deduplicate publishes:\n%s", first.stdout.String())
	}
	refused := w.auditCount(t, m.ID, func(a ledger.AuditEntry) bool {
		return a.Action == "execute.refused" && a.Details["gate"] == "one-executor-per-job"
	})
	if refused != 1 {
		t.Errorf("%d execute.refused audit entries for the one-executor-per-job gate, want 1", refused)
	}
}

// TestFaultTwoExecutorsStartedTogether races two executors of one job from the start: exactly one
// runs it, the other is refused before it publishes anything.
func TestFaultTwoExecutorsStartedTogether(t *testing.T) {
	slowtest.Require(t)
	const n = 100
	w, m := newShadowedWorld(t, n, "job-fault-race")

	a, b := startReplayctl(t, w.executeArgs()...), startReplayctl(t, w.executeArgs()...)
	codeA, codeB := a.wait(t, 60*time.Second), b.wait(t, 60*time.Second)
	winner, loser := a, b
	if codeA == cmdutil.ExitGateRefused {
		winner, loser = b, a
		codeA, codeB = codeB, codeA
	}
	if codeA != cmdutil.ExitOK || codeB != cmdutil.ExitGateRefused {
		t.Fatalf("exits %d and %d, want 0 and 3:\n%s\n%s", codeA, codeB, a.outputOf(), b.outputOf())
	}
	refusedAsSecondExecutor(t, loser, m.ID)
	if !strings.Contains(winner.stdout.String(), "execute of job "+m.ID+": completed") {
		t.Errorf("the winner's output:\n%s", winner.stdout.String())
	}
	w.assertChargedOnce(t, n)
	if got := w.StreamMessages(); got != n {
		t.Errorf("%d messages on the billing stream, want %d", got, n)
	}
}
