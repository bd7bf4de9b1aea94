package cli

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
)

func TestMigrateFlags(t *testing.T) {
	var got *MigrateOptions
	_, stderr, code := execCommand(t, false, "migrate --json", func(f *Factory, root *cobra.Command) {
		replaceCommand(root, NewCmdMigrate(f, func(o *MigrateOptions) error { got = o; return nil }))
	})
	if code != ExitOK || got == nil {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !got.JSON || got.IO == nil || got.Ledger == nil {
		t.Errorf("options %+v", *got)
	}
}

func TestMigrateTwice(t *testing.T) {
	url := pgtest.URL(t)
	stdout, stderr, code := runCommand(t, false, "migrate --database-url '"+url+"'")
	if code != ExitOK {
		t.Fatalf("first migrate: exit %d, stderr %q", code, stderr)
	}
	first := regexp.MustCompile(`^ledger schema at version (\d+) \(applied: 0001_init[^)]*\)\n$`).FindStringSubmatch(stdout)
	if first == nil {
		t.Fatalf("first migrate printed %q", stdout)
	}

	stdout, stderr, code = runCommand(t, false, "migrate --database-url '"+url+"'")
	if code != ExitOK {
		t.Fatalf("second migrate: exit %d, stderr %q", code, stderr)
	}
	if want := "ledger schema already at version " + first[1] + ", nothing to apply\n"; stdout != want {
		t.Errorf("second migrate printed %q, want %q", stdout, want)
	}

	stdout, _, code = runCommand(t, false, "migrate --json --database-url '"+url+"'")
	var res struct {
		Version int      `json:"version"`
		Applied []string `json:"applied"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != ExitOK {
		t.Fatalf("exit %d, %v: %s", code, err, stdout)
	}
	if res.Applied == nil || len(res.Applied) != 0 || res.Version < 1 {
		t.Errorf("--json result %s", stdout)
	}
}
