package cli

import (
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/cmdutil"
)

// TestDrainNeedsYesBeforeConnecting: a drain deletes DLQ messages for good, so without --yes it
// is refused as bad input (exit 2) before any connection is opened.
func TestDrainNeedsYesBeforeConnecting(t *testing.T) {
	t.Parallel()
	_, stderr, code := runCommand(t, false, "drain job-1 --database-url postgres://nobody@127.0.0.1:1/none --nats-url nats://127.0.0.1:1")
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, "pass --yes to drain job job-1") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 asking for --yes", code, stderr)
	}
}
