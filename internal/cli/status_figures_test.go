package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/cmdutil"
)

func TestStatusReportsTheCallBudgetExecuteEnforces(t *testing.T) {
	t.Parallel()
	w, m := newShadowedWorld(t, 8, "job-cli-status-budget")

	// Before any run: the budget a run would enforce at the default --max-calls-over.
	stdout, stderr, code := w.replayctl(t, "execute --dry-run --json "+w.ManifestPath())
	if code != cmdutil.ExitOK {
		t.Fatalf("dry run: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	var dry executor.Result
	if err := json.Unmarshal([]byte(stdout), &dry); err != nil {
		t.Fatal(err)
	}
	if r := w.statusJSON(t, m.ID); dry.Preflight.CallBudget == 0 || r.Counts.CallBudget != dry.Preflight.CallBudget {
		t.Errorf("before execute: status callBudget %d, the dry run's %d", r.Counts.CallBudget, dry.Preflight.CallBudget)
	}

	stdout, stderr, code = w.replayctl(t, "execute --yes --json --max-calls-over 0.5 "+w.ManifestPath())
	if code != cmdutil.ExitOK {
		t.Fatalf("execute: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	var res executor.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.Preflight.CallBudget <= dry.Preflight.CallBudget {
		t.Fatalf("--max-calls-over 0.5 gave budget %d, the default %d", res.Preflight.CallBudget, dry.Preflight.CallBudget)
	}
	r := w.statusJSON(t, m.ID)
	if r.Counts.CallBudget != res.Preflight.CallBudget || r.Budget == nil || r.Budget.MaxCallsOver != 0.5 {
		t.Errorf("after execute: status callBudget %d (%+v), execute enforced %d", r.Counts.CallBudget, r.Budget, res.Preflight.CallBudget)
	}
	stdout, _, _ = w.replayctl(t, "status "+m.ID)
	if want := "external call budget"; !strings.Contains(stdout, want) || !strings.Contains(stdout, "50% --max-calls-over") {
		t.Errorf("status lacks the budget row with its source:\n%s", stdout)
	}
}

func TestARerunWithNothingLeftToPublishStillFindsTheDurable(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	m := w.Shadowed(5, "job-cli-rerun-durable")
	// The consumer's durable exists, but nothing consumes: every target is published and the run
	// stops on the settle timeout, leaving the job executing with nothing left to publish.
	stopConsumer := w.RunConsumer(w.NewConsumer(nil, nil))
	w.WaitIdle() // the durable exists
	stopConsumer()
	stdout, stderr, code := w.replayctl(t, "execute --yes --canary 0 --settle-timeout 2s "+w.ManifestPath())
	if code != cmdutil.ExitGuardStopped {
		t.Fatalf("execute without a running consumer: exit %d, want 4:\n%s\n%s", code, stdout, stderr)
	}
	if n := w.QueryInt(`select count(*) from job_targets where job_id = $1 and status = 'published'`, m.ID); n != 5 {
		t.Fatalf("the stalled run recorded %d of 5 targets published; the rerun would still publish", n)
	}
	// The consumer comes back and handles every published target: nothing is left to publish,
	// and the job still waits for a run to record its end.
	w.RunConsumer(w.NewConsumer(nil, nil))
	w.WaitIdle()
	stdout, stderr, code = w.replayctl(t, "execute --yes --json "+w.ManifestPath())
	if code != cmdutil.ExitOK {
		t.Fatalf("rerun: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	var res executor.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.Preflight.ToPublish != 0 || !res.Preflight.DurableFound {
		t.Errorf("rerun: toPublish %d, durableFound %t; want 0 and true", res.Preflight.ToPublish, res.Preflight.DurableFound)
	}
	if strings.Contains(stderr, "was not found") {
		t.Errorf("rerun says the existing durable was not found:\n%s", stderr)
	}
	if s := w.JobStatus(m.ID); s != "completed" {
		t.Errorf("job %s after the rerun", s)
	}
}
