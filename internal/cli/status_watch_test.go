package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/cli/statuscmd"
	"github.com/replayctl/replayctl/internal/cmdutil"
)

// status --watch off a terminal prints one line per interval while the job runs, and ends by
// itself (exit 0) once the job completes, its last line saying so.
func TestStatusWatchPrintsALinePerIntervalUntilTheJobCompletes(t *testing.T) {
	t.Parallel()
	w, m := newShadowedWorld(t, 30, "job-cli-status-watch")
	ran := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, err := executor.Execute(w.Ctx, w.NATS.JS, w.Store, executor.Options{Manifest: m, Guards: executor.DefaultGuards(),
			Rate: 20, Canary: executor.NoCanary, PollInterval: 100 * time.Millisecond, Actor: "alice", Owner: "exec-watch"})
		ran <- err
	}()
	started := time.Now()
	stdout, stderr, code := w.replayctl(t, "status --watch --interval 200ms "+m.ID)
	took := time.Since(started)
	if err := <-ran; err != nil {
		t.Fatalf("execute: %v", err)
	}
	if code != cmdutil.ExitOK {
		t.Fatalf("status --watch: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	last := lines[len(lines)-1]
	if len(lines) < 4 || !strings.Contains(last, " completed: 30/30 settled (30 completed, 0 failed, 0 uncertain)") {
		t.Fatalf("%d lines in %s, want several and the last one completed:\n%s", len(lines), took, stdout)
	}
	var running bool
	for _, l := range lines {
		if strings.Contains(l, " publishing: ") || strings.Contains(l, " waiting: ") {
			running = true
			for _, want := range []string{"targets/s, ETA ", "guards: calls ", "(max 5.0%)", "instances: ", "durable billing: "} {
				if !strings.Contains(l, want) {
					t.Errorf("a line of the running job lacks %q:\n%s", want, l)
				}
			}
		}
	}
	if !running {
		t.Errorf("no line shows the job running:\n%s", stdout)
	}
	t.Logf("%d lines in %s; one of the running job: %s; last: %s", len(lines), took.Round(time.Millisecond), lines[len(lines)/2], last)

	// A final job on a terminal: one view, drawn over the screen, that says the job ended (not
	// that it is still being watched), and the watch ends.
	stdout, stderr, code = execCommand(t, true, "status --watch --interval 200ms "+m.ID+" "+w.flags, nil)
	if code != cmdutil.ExitOK || strings.Count(stdout, statuscmd.ClearScreen) != 1 || strings.Contains(stdout, "watching every") ||
		!strings.Contains(stdout, "has ended (completed)") ||
		!strings.Contains(stdout, "consumer instances (lease owners)") {
		t.Fatalf("status --watch on a terminal: exit %d:\n%q\n%s", code, stdout, stderr)
	}
}

func TestStatusWatchRefusesAnIntervalBelow100ms(t *testing.T) {
	t.Parallel()
	_, stderr, code := runCommand(t, false, "status --watch --interval 5ms job-x --database-url postgres://127.0.0.1:1/none")
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, "--interval 5ms: must be at least 100ms") {
		t.Fatalf("exit %d, want 2:\n%s", code, stderr)
	}
}
