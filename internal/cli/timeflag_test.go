package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cli/shadowcmd"
	"github.com/replayctl/replayctl/internal/cmdutil"
)

func TestDurationFlagsTakeDays(t *testing.T) {
	t.Parallel()
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

func TestSinceRefusesADurationItCannotRead(t *testing.T) {
	t.Parallel()
	_, stderr, code := execCommand(t, false, "plan --consumer c --stream S --reason r -o j.json --since 2x", noConnections(t))
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, `--since "2x"`) || !strings.Contains(stderr, "days (2d)") {
		t.Fatalf("plan --since 2x: exit %d:\n%s", code, stderr)
	}
}
