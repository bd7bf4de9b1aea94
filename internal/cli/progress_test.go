package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/cmdutil"
)

func TestExecuteWithoutTTYLogsAProgressLinePerInterval(t *testing.T) {
	t.Parallel()
	w, m := newShadowedWorld(t, 30, "job-cli-progress-lines")
	// --rate 100 holds the publishing of 30 targets to about 0.3 s, three intervals: unpaced, the
	// run could end before the first interval (it did in 1 of 8 runs), and a run shorter than the
	// interval rightly logs no progress line.
	stdout, stderr, code := w.replayctl(t, "execute --yes --rate 100 --progress-interval 100ms "+w.ManifestPath())
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d, want 0:\n%s\n%s", code, stdout, stderr)
	}
	stamp := `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ `
	if !regexp.MustCompile(`(?m)^` + stamp + `publishing 30 targets of job ` + m.ID).MatchString(stderr) {
		t.Errorf("stderr lacks the timestamped publishing step:\n%s", stderr)
	}
	line := regexp.MustCompile(`(?m)^` + stamp + `execute: \w+: \d+/30 targets \(\d+%\)`)
	if n := len(line.FindAllString(stderr, -1)); n < 1 {
		t.Errorf("no progress line in a run longer than the interval:\n%s", stderr)
	}
	if strings.ContainsAny(stderr, "\r\x1b") {
		t.Errorf("a log got terminal redraws:\n%q", stderr)
	}
	if strings.Contains(stdout, "targets (") {
		t.Errorf("progress lines went to stdout:\n%s", stdout)
	}
}

func TestProgressIntervalMustNotBeNegative(t *testing.T) {
	t.Parallel()
	_, stderr, code := runCommand(t, false, "status job-1 --progress-interval -1s")
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, "--progress-interval -1s") {
		t.Errorf("exit %d, stderr %q; want 2 naming the flag", code, stderr)
	}
}
