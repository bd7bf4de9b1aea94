package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cli/migratecmd"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
)

func TestMigrateFlags(t *testing.T) {
	t.Parallel()
	var got *migratecmd.MigrateOptions
	_, stderr, code := execCommand(t, false, "migrate --json", func(f *cmdutil.Factory, root *cobra.Command) {
		replaceCommand(root, migratecmd.NewCmdMigrate(f, func(o *migratecmd.MigrateOptions) error { got = o; return nil }))
	})
	if code != cmdutil.ExitOK || got == nil {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !got.JSON || got.IO == nil || got.Ledger == nil {
		t.Errorf("options %+v", *got)
	}
}

func TestMigrateTwice(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	stdout, stderr, code := runCommand(t, false, "migrate --database-url '"+url+"'")
	if code != cmdutil.ExitOK {
		t.Fatalf("first migrate: exit %d, stderr %q", code, stderr)
	}
	first := regexp.MustCompile(`^ledger schema at version (\d+) \(applied: 0001_init[^)]*\)\n$`).FindStringSubmatch(stdout)
	if first == nil {
		t.Fatalf("first migrate printed %q", stdout)
	}

	stdout, stderr, code = runCommand(t, false, "migrate --database-url '"+url+"'")
	if code != cmdutil.ExitOK {
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
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != cmdutil.ExitOK {
		t.Fatalf("exit %d, %v: %s", code, err, stdout)
	}
	if res.Applied == nil || len(res.Applied) != 0 || res.Version < 1 {
		t.Errorf("--json result %s", stdout)
	}
}

// migrate --help names the version a fresh ledger ends at; it once said 1 when the schema was at 6.
func TestMigrateHelpNamesTheVersionMigrateReaches(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	stdout, stderr, code := runCommand(t, false, "migrate --json --database-url '"+url+"'")
	var res struct {
		Version int      `json:"version"`
		Applied []string `json:"applied"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != cmdutil.ExitOK || len(res.Applied) == 0 {
		t.Fatalf("migrate --json: exit %d, %v: %s%s", code, err, stdout, stderr)
	}
	help, _, _ := runCommand(t, false, "migrate --help")
	last := res.Applied[len(res.Applied)-1]
	for _, want := range []string{
		fmt.Sprintf("needs\nschema version %d (migration %s)", res.Version, last),
		fmt.Sprintf(`{"version": %d, "applied": [..., "%s"]}`, res.Version, last),
	} {
		if !strings.Contains(help, want) {
			t.Errorf("migrate --help does not say %q:\n%s", want, help)
		}
	}
}
