package cli

import (
	"os/exec"
	"strings"
	"testing"
)

// A verb package takes what it shares with other verbs (renderers, option types) from
// internal/cli/shared, never from a sibling verb: a change to one verb's output cannot reach
// into another's package, and a newcomer finds each renderer in one place.
func TestNoVerbPackageImportsAnother(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/replayctl/replayctl/internal/cli/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	verbs := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if !strings.HasSuffix(fields[0], "cmd") {
			continue
		}
		verbs++
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, "github.com/replayctl/replayctl/internal/cli/") && strings.HasSuffix(imp, "cmd") {
				t.Errorf("%s imports the verb package %s: move what they share to internal/cli/shared", fields[0], imp)
			}
		}
	}
	if verbs < 15 {
		t.Fatalf("go list found %d verb packages; the check would pass on nothing", verbs)
	}
}
