package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/manifest"
)

// The shell completes job IDs and consumers from the ledger, through cobra's __complete verb.
func TestCompletionOffersJobIDsAndConsumersFromTheLedger(t *testing.T) {
	t.Parallel()
	e := newPlanEnv(t)
	out := filepath.Join(e.dir, "job.json")
	if _, stderr, code := e.plan(t, false, "--reason '"+planReason+"' -o "+out); code != cmdutil.ExitOK {
		t.Fatalf("plan: exit %d:\n%s", code, stderr)
	}
	m, err := manifest.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{"__complete status " + e.flags + " job-", "__complete execute " + e.flags + " ''"} {
		stdout, stderr, code := runCommand(t, false, args)
		if code != cmdutil.ExitOK || !strings.Contains(stdout, m.ID+"\n") {
			t.Errorf("%s: exit %d, offered:\n%s\n%s; want %s", args, code, stdout, stderr, m.ID)
		}
	}
	stdout, _, _ := runCommand(t, false, "__complete status "+e.flags+" nomatch-")
	if strings.Contains(stdout, m.ID) {
		t.Errorf("a prefix no job has offered %s:\n%s", m.ID, stdout)
	}
	stdout, stderr, code := runCommand(t, false, "__complete ledger stats "+e.flags+" --consumer ''")
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "billing\n") {
		t.Errorf("--consumer completion: exit %d:\n%s\n%s; want billing", code, stdout, stderr)
	}
}

// An unreachable ledger costs the prompt a moment and offers nothing; it never hangs the shell.
func TestCompletionDoesNotHangOnAnUnreachableLedger(t *testing.T) {
	t.Parallel()
	start := time.Now()
	stdout, _, code := runCommand(t, false, "__complete status --database-url postgres://ops@10.255.255.1:5432/ledger ''")
	if d := time.Since(start); d > cmdutil.CompletionTimeout+time.Second {
		t.Errorf("completion took %v with the ledger unreachable; want at most about %v", d, cmdutil.CompletionTimeout)
	}
	if code != cmdutil.ExitOK || strings.Contains(stdout, "job-") {
		t.Errorf("exit %d, offered:\n%s", code, stdout)
	}
}
