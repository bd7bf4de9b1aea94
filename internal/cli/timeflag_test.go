package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cli/shadowcmd"
	"github.com/replayctl/replayctl/internal/cmdutil"
)

func TestParseDurationReadsDaysWeeksAndGoDurations(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"90m":   90 * time.Minute,
		"1h30m": 90 * time.Minute,
		"2d":    48 * time.Hour,
		"1w":    7 * 24 * time.Hour,
		"1w2d":  9 * 24 * time.Hour,
		"1d12h": 36 * time.Hour,
		" 3d ":  72 * time.Hour,
		"0":     0,
	} {
		if got, ok := cmdutil.ParseDuration(in); !ok || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "d", "2x", "-1d", "-6h", "1d-30h", "2d1w", "999999d", "1.5d"} {
		if got, ok := cmdutil.ParseDuration(in); ok {
			t.Errorf("parseDuration(%q) = %v, accepted", in, got)
		}
	}
}

func TestSinceTakesDaysLikeTheOtherDurationFlags(t *testing.T) {
	got, err := cmdutil.ParseTimeFlag("since", "2d", fixedNow)
	if err != nil || !got.Equal(fixedNow.Add(-48*time.Hour)) {
		t.Fatalf("--since 2d = %v, %v; want %v", got, err, fixedNow.Add(-48*time.Hour))
	}
	_, stderr, code := execCommand(t, false, "plan --consumer c --stream S --reason r -o j.json --since 2x", noConnections(t))
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, `--since "2x"`) || !strings.Contains(stderr, "days (2d)") {
		t.Fatalf("plan --since 2x: exit %d:\n%s", code, stderr)
	}
}

func TestDurationFlagsTakeDays(t *testing.T) {
	var shadowOpts *shadowcmd.ShadowOptions
	_, stderr, code := execCommand(t, false, "shadow job.json --timeout 1d", func(f *cmdutil.Factory, root *cobra.Command) {
		replaceCommand(root, shadowcmd.NewCmdShadow(f, func(o *shadowcmd.ShadowOptions) error { shadowOpts = o; return nil }))
	})
	if code != cmdutil.ExitOK || shadowOpts.Request.Timeout != 24*time.Hour {
		t.Fatalf("shadow --timeout 1d: exit %d, %+v:\n%s", code, shadowOpts, stderr)
	}
	_, stderr, code = runCommand(t, false, "shadow job.json --timeout 2x")
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, "want a length of time in weeks (1w), days (2d)") {
		t.Fatalf("shadow --timeout 2x: exit %d:\n%s", code, stderr)
	}
}
