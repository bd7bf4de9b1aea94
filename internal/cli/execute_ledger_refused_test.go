package cli

import (
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/cmdutil"
)

// TestExecuteStoppedByAStatementTheLedgerRefusesExits1WithTheSQLError: a constraint violation is
// a bug, not a lost connection. Before, the executor told the operator "nothing is lost, run
// execute again" for any PostgreSQL error, and a rerun hit the same bug.
func TestExecuteStoppedByAStatementTheLedgerRefusesExits1WithTheSQLError(t *testing.T) {
	t.Parallel()
	w, m := newShadowedWorld(t, 20, "job-cli-ledger-refused")
	// A schema bug the executor's "mark published" write runs into.
	if _, err := w.DB.Exec(w.Ctx, `alter table job_targets add constraint replay_test_no_published check (status <> 'published') not valid`); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := w.replayctl(t, "execute --yes "+w.ManifestPath())
	if code != cmdutil.ExitFailure {
		t.Fatalf("exit %d, want 1:\n%s\n%s", code, stdout, stderr)
	}
	if want := lacking(stderr, "execute of job "+m.ID+" stopped after publishing", "SQLSTATE 23514", "replay_test_no_published",
		"not a lost connection", "replayctl status "+m.ID); want != "" {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	if strings.Contains(stderr, "nothing is lost") {
		t.Errorf("a constraint violation is reported as harmless:\n%s", stderr)
	}
}
