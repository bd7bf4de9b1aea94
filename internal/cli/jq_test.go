package cli

import (
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/cmdutil"
)

func TestJQSelectsFromTheJSONOutputAndImpliesJSON(t *testing.T) {
	t.Parallel()
	m := testManifest(t)
	path := writeManifest(t, m)
	out, errOut, code := runCommand(t, false, "validate "+path+" --jq .jobId")
	if code != 0 || out != m.ID+"\n" {
		t.Fatalf("--jq .id: exit %d, stdout %q, stderr %q; want the bare ID", code, out, errOut)
	}
	out, _, code = runCommand(t, false, "validate "+path+" --json --jq '{valid, targets}'")
	if code != 0 || out != "{\"targets\":12,\"valid\":true}\n" {
		t.Fatalf("--jq object: exit %d, stdout %q", code, out)
	}
	// A failing command's error document goes through the filter too.
	out, _, code = runCommand(t, false, "validate /nonexistent/job.json --jq .exitCode")
	if code != cmdutil.ExitUsage || out != "2\n" {
		t.Fatalf("--jq on an error: exit %d, stdout %q", code, out)
	}
}

func TestABadJQExpressionIsAUsageErrorThatPointsAtItsColumn(t *testing.T) {
	t.Parallel()
	m := testManifest(t)
	_, errOut, code := runCommand(t, false, "validate "+writeManifest(t, m)+" --jq '.targets | ('")
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, "--jq") || !strings.Contains(errOut, "^") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = runCommand(t, false, "validate "+writeManifest(t, m)+" --jq 'error(\"no\")'")
	if code != cmdutil.ExitFailure || !strings.Contains(errOut, "--jq: error: no") {
		t.Fatalf("a filter that fails: exit %d, stderr %q", code, errOut)
	}
}
