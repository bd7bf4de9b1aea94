package cli

import (
	"os/exec"
	"strings"
	"testing"
)

// Examples import the product, never the reverse: no package outside examples/ imports one
// inside it, so an example can be changed or deleted without touching the product.
func TestNoProductPackageImportsAnExample(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-test", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/replayctl/replayctl/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if strings.Contains(fields[0], "/examples/") {
			continue
		}
		checked++
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, "github.com/replayctl/replayctl/examples/") {
				t.Errorf("%s imports the example %s: move what it needs into the product (internal/billing holds the billing domain)", fields[0], imp)
			}
		}
	}
	if checked < 30 {
		t.Fatalf("go list found %d packages; the check would pass on nothing", checked)
	}
}
