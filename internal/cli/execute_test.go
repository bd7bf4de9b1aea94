package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/protocol"
)

func TestExecuteDryRunSaysNothingWasPublished(t *testing.T) {
	t.Parallel()
	w, m := newShadowedWorld(t, 12, "job-cli-dry")

	stdout, stderr, code := w.replayctl(t, "execute --dry-run "+w.ManifestPath())
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d, want 0:\n%s\n%s", code, stdout, stderr)
	}
	if !strings.HasPrefix(stdout, "DRY RUN: nothing was published.") {
		t.Errorf("a dry run's first line must say nothing was published:\n%s", stdout)
	}
	for _, want := range []string{
		"DRY RUN: nothing was published, no status changed",
		"would publish now\t12",
		"would publish first (of 12):",
		protocol.MsgID(m.ID, exectest.EventID(0)),
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "published by this run") {
		t.Errorf("a dry run shows figures of a run that did not happen:\n%s", stdout)
	}

	stdout, stderr, code = w.replayctl(t, "execute --dry-run --json "+w.ManifestPath())
	if code != cmdutil.ExitOK {
		t.Fatalf("--json: exit %d, want 0:\n%s\n%s", code, stdout, stderr)
	}
	var r struct {
		DryRun    *bool `json:"dryRun"`
		Published int64 `json:"published"`
		Preflight struct {
			JobID     string `json:"jobId"`
			ToPublish int64  `json:"toPublish"`
		} `json:"preflight"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("--json: stdout is not one JSON document: %v\n%s", err, stdout)
	}
	if r.DryRun == nil || !*r.DryRun || r.Preflight.ToPublish != 12 || r.Preflight.JobID != m.ID || r.Published != 0 {
		t.Fatalf("--json: %s; want dryRun true and preflight.toPublish 12", stdout)
	}

	if n := w.StreamMessages(); n != 0 {
		t.Fatalf("two dry runs published %d messages", n)
	}
	if calls := w.Provider.Calls(""); calls != 0 {
		t.Fatalf("two dry runs made %d external calls", calls)
	}
	if s := w.JobStatus(m.ID); s != "shadowed" {
		t.Fatalf("a dry run moved the job to %s, want it still shadowed", s)
	}
}

func TestExecuteWithoutATerminalRequiresYes(t *testing.T) {
	t.Parallel()
	w, m := newShadowedWorld(t, 5, "job-cli-noyes")

	stdout, stderr, code := w.replayctl(t, "execute "+w.ManifestPath())
	if code != cmdutil.ExitGateRefused {
		t.Fatalf("exit %d, want 3:\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "pass --yes") || !strings.Contains(stderr, "nothing was published") {
		t.Errorf("stderr must say nothing was published and to pass --yes: %q", stderr)
	}
	if strings.Contains(stderr, "Type the job ID") {
		t.Errorf("prompted without a terminal: %q", stderr)
	}
	if n := w.StreamMessages(); n != 0 || w.Provider.Calls("") != 0 {
		t.Fatalf("an unconfirmed execute published %d messages, made %d calls", n, w.Provider.Calls(""))
	}
	if s := w.JobStatus(m.ID); s != "shadowed" {
		t.Fatalf("job %s after a refusal, want shadowed", s)
	}
}

func TestExecuteOnATerminalAsksForTheJobID(t *testing.T) {
	t.Parallel()
	w, m := newShadowedWorld(t, 8, "job-cli-confirm")
	args := "execute " + w.ManifestPath() + " " + w.flags

	for _, answer := range []string{"job-cli-other\n", "yes\n", ""} {
		stdout, stderr, code := execCommandWithStdin(t, true, answer, args)
		if code != cmdutil.ExitGateRefused {
			t.Fatalf("answer %q: exit %d, want 3:\n%s\n%s", answer, code, stdout, stderr)
		}
		for _, want := range []string{"Replay job " + m.ID + " of consumer billing", "to publish now          8", "Type the job ID to confirm", "not confirmed, nothing was published"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("answer %q: stderr lacks %q:\n%s", answer, want, stderr)
			}
		}
		if n := w.StreamMessages(); n != 0 {
			t.Fatalf("answer %q: a declined execute published %d messages", answer, n)
		}
	}
	if s := w.JobStatus(m.ID); s != "shadowed" {
		t.Fatalf("job %s after declined confirmations, want shadowed", s)
	}

	stdout, stderr, code := execCommandWithStdin(t, true, m.ID+"\n", args)
	if code != cmdutil.ExitOK {
		t.Fatalf("typed the job ID: exit %d, want 0:\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "execute of job "+m.ID+": completed") {
		t.Errorf("stdout:\n%s", stdout)
	}
	w.assertChargedOnce(t, 8)
}

func TestExecuteReplaysEveryTargetOnceAndStatusShowsTheCounts(t *testing.T) {
	t.Parallel()
	const n = 30
	w, m := newShadowedWorld(t, n, "job-cli-all")

	stdout, stderr, code := w.replayctl(t, "execute --yes "+w.ManifestPath())
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d, want 0:\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"execute of job " + m.ID + ": completed", fmt.Sprintf("published by this run\t%d", n),
		fmt.Sprintf("completed\t%d", n), "failed\t0", "uncertain\t0", "remaining\t0", fmt.Sprintf("external calls\t%d", 2*n)} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "DRY RUN") {
		t.Errorf("a real run reads like a dry run:\n%s", stdout)
	}
	w.assertChargedOnce(t, n)
	if calls := w.Provider.Calls(billing.EffectReceipt); calls != n {
		t.Errorf("%d receipts mailed, want %d", calls, n)
	}

	stdout, stderr, code = w.replayctl(t, "status "+m.ID)
	if code != cmdutil.ExitOK {
		t.Fatalf("status: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"job " + m.ID + " of consumer billing: completed by alice", fmt.Sprintf("targets\t%d", n),
		fmt.Sprintf("completed\t%d", n), "remaining\t0", "uncertain\t0", fmt.Sprintf("external calls\t%d", 2*n)} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, stdout)
		}
	}
	r := w.statusJSON(t, m.ID)
	if r.Status != "completed" || r.Counts.Completed != n || r.Counts.Targets != n || r.Counts.Remaining != 0 || len(r.Uncertain) != 0 {
		t.Fatalf("status --json: status %q, counts %+v", r.Status, r.Counts)
	}
	counts, err := w.Store.JobTargetsCount(w.Ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if counts["completed"] != n {
		t.Errorf("job_targets %v, want %d completed", counts, n)
	}
}

func TestExecuteGatesRefuseWithExit3AndSayWhatToDo(t *testing.T) {
	t.Parallel()
	t.Run("job not shadowed", func(t *testing.T) {
		w := newExecWorld(t)
		w.Seed(5)
		m := w.Plan("job-cli-planned")
		for _, flag := range []string{"--dry-run", "--yes"} {
			stdout, stderr, code := w.replayctl(t, "execute "+flag+" "+w.ManifestPath())
			if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "job "+m.ID+" is planned") || !strings.Contains(stderr, "run `replayctl shadow`") {
				t.Errorf("%s: exit %d, stderr %q; want 3 telling to run shadow first\n%s", flag, code, stderr, stdout)
			}
		}
		if n := w.StreamMessages(); n != 0 {
			t.Fatalf("a refused execute published %d messages", n)
		}
	})

	t.Run("a second run of a completed job", func(t *testing.T) {
		w, m := newShadowedWorld(t, 5, "job-cli-twice")
		if stdout, stderr, code := w.replayctl(t, "execute --yes "+w.ManifestPath()); code != cmdutil.ExitOK {
			t.Fatalf("first execute: exit %d:\n%s\n%s", code, stdout, stderr)
		}
		before := w.StreamMessages()
		stdout, stderr, code := w.replayctl(t, "execute --yes "+w.ManifestPath())
		if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "already completed") || !strings.Contains(stderr, "plan a new job") {
			t.Fatalf("second execute: exit %d, stderr %q; want 3 telling to plan a new job\n%s", code, stderr, stdout)
		}
		if after := w.StreamMessages(); after != before {
			t.Fatalf("a refused second execute published %d messages", after-before)
		}
		w.assertChargedOnce(t, 5)
		if s := w.JobStatus(m.ID); s != "completed" {
			t.Fatalf("job %s", s)
		}
	})

	t.Run("a manifest edited after plan", func(t *testing.T) {
		w := newExecWorld(t)
		w.Shadowed(5, "job-cli-tampered")
		editFile(t, w.ManifestPath(), `"writeForbidden": false`, `"writeForbidden": true`)
		stdout, stderr, code := w.replayctl(t, "execute --yes "+w.ManifestPath())
		if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "tampered") {
			t.Fatalf("exit %d, stderr %q; want 3 saying the manifest was tampered with\n%s", code, stderr, stdout)
		}
		if n := w.StreamMessages(); n != 0 {
			t.Fatalf("a tampered manifest published %d messages", n)
		}
	})

	t.Run("a manifest this ledger never recorded", func(t *testing.T) {
		w := newExecWorld(t)
		other := writeManifest(t, testManifest(t))
		stdout, stderr, code := w.replayctl(t, "execute --yes "+other)
		if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "the ledger has no job job-20261202-test01") || !strings.Contains(stderr, "--database-url") {
			t.Fatalf("exit %d, stderr %q; want 3 naming the job and the ledger to check\n%s", code, stderr, stdout)
		}
	})

	t.Run("JSON on a refusal", func(t *testing.T) {
		w := newExecWorld(t)
		w.Seed(3)
		w.Plan("job-cli-json-refused")
		stdout, _, code := w.replayctl(t, "execute --yes --json "+w.ManifestPath())
		var res struct {
			Error    string `json:"error"`
			ExitCode int    `json:"exitCode"`
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != cmdutil.ExitGateRefused || res.ExitCode != cmdutil.ExitGateRefused ||
			!strings.Contains(res.Error, "replayctl shadow") {
			t.Fatalf("exit %d, %v: stdout %s; want one JSON error object with exitCode 3", code, err, stdout)
		}
	})
}

func TestExecuteWithAnUncertainTargetExits5AndListsIt(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	m := w.Shadowed(10, "job-cli-uncertain")
	unsure := exectest.EventID(4)
	ordinary := billing.Handler(w.Provider, time.Now)
	handler := func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		if ev.ID == unsure && ev.Mode == consumer.ModeReplay {
			_, err := fx.Call(ctx, billing.EffectCharge, "payments-api", func(context.Context) (string, error) {
				return "", fmt.Errorf("connection reset after the request was sent: %w", consumer.ErrOutcomeUnknown)
			})
			return consumer.Result{}, err
		}
		return ordinary(ctx, ev, fx)
	}
	w.RunConsumer(w.NewConsumer(handler, nil))

	stdout, stderr, code := w.replayctl(t, "execute --yes "+w.ManifestPath())
	if code != cmdutil.ExitNeedsReview {
		t.Fatalf("exit %d, want 5:\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"uncertain: review by hand, never retried automatically (1):", unsure, "completed\t9", "uncertain\t1"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "1 targets are uncertain") || !strings.Contains(stderr, "replayctl status "+m.ID) {
		t.Errorf("stderr %q", stderr)
	}
	if got := w.Provider.Charges(exectest.Order(4).OrderID); got != 0 {
		t.Errorf("the uncertain order was charged %d times by the provider", got)
	}
	if dups := w.DuplicateCharges(); len(dups) > 0 {
		t.Errorf("duplicates: %v", dups)
	}

	r := w.statusJSON(t, m.ID)
	if r.Status != "completed" || r.Counts.Uncertain != 1 || len(r.Uncertain) != 1 || r.Uncertain[0].EventID != unsure {
		t.Fatalf("status --json: %q, counts %+v, uncertain %+v", r.Status, r.Counts, r.Uncertain)
	}
	// The uncertain target is never retried, not even by a second execute.
	if _, _, code := w.replayctl(t, "execute --yes "+w.ManifestPath()); code != cmdutil.ExitGateRefused {
		t.Fatalf("execute of a completed job with an uncertain target: exit %d, want 3", code)
	}
}

func TestExecuteStoppedByTheCallBudgetGuardExits4AndPausesTheJob(t *testing.T) {
	// Waits on timeouts and restarts in a world of its own: runs beside the others.
	t.Parallel()
	const n = 60
	w := newExecWorld(t)
	m := w.Shadowed(n, "job-cli-budget")
	ordinary := billing.Handler(w.Provider, time.Now)
	// A consumer that now makes a third external call per event, over the plan's two.
	extra := func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		if _, err := fx.Call(ctx, "audit.log", "audit-api", func(context.Context) (string, error) { return "ok", nil }); err != nil {
			return consumer.Result{}, err
		}
		return ordinary(ctx, ev, fx)
	}
	w.RunConsumer(w.NewConsumer(extra, nil))

	stdout, stderr, code := w.replayctl(t, "execute --yes --json --rate 20 "+w.ManifestPath())
	if code != cmdutil.ExitGuardStopped {
		t.Fatalf("exit %d, want 4:\n%s\n%s", code, stdout, stderr)
	}
	var r executor.Result
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, stdout)
	}
	if r.Stop == nil || r.Stop.Kind != executor.StopCallBudget || r.JobStatus != "paused" || r.Final.Remaining == 0 {
		t.Fatalf("result: stop %+v, job %s, final %+v; want a call-budget stop that paused the job before the end", r.Stop, r.JobStatus, r.Final)
	}
	if !strings.Contains(stderr, "--max-calls-over") {
		t.Errorf("stderr does not name the guard's flag: %q", stderr)
	}

	stdout, stderr, code = w.replayctl(t, "status "+m.ID)
	if code != cmdutil.ExitOK {
		t.Fatalf("status: exit %d:\n%s", code, stderr)
	}
	for _, want := range []string{"job " + m.ID + " of consumer billing: paused by replayctl-guard", "because: guard call_budget:", "--max-calls-over",
		"executor: none attached", "run `replayctl execute " + m.ID + "` to continue"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, stdout)
		}
	}

	// A paused job is not executed until it is resumed.
	before := w.StreamMessages()
	_, stderr, code = w.replayctl(t, "execute --yes "+w.ManifestPath())
	if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "resume it with `replayctl resume "+m.ID+"`") {
		t.Fatalf("execute of a paused job: exit %d, stderr %q; want 3 telling to resume", code, stderr)
	}
	if after := w.StreamMessages(); after != before {
		t.Fatalf("execute of a paused job published %d messages", after-before)
	}

	// Reviewed: resume, and continue with a budget that admits the third call. Nothing already
	// charged is charged again.
	stdout, stderr, code = w.replayctl(t, "resume "+m.ID)
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "paused -> executing") || !strings.Contains(stdout, "no executor is attached") {
		t.Fatalf("resume: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = w.replayctl(t, "execute --yes --max-calls-over 1 "+w.ManifestPath())
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "execute of job "+m.ID+": completed") {
		t.Fatalf("execute after resume: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	w.assertChargedOnce(t, n)
}
