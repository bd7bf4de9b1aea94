package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cli/controlcmd"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/job"
)

func TestControlFlags(t *testing.T) {
	t.Parallel()
	for _, action := range []string{"pause", "resume", "cancel"} {
		var got *controlcmd.ControlOptions
		capture := func(f *cmdutil.Factory, root *cobra.Command) {
			replaceCommand(root, controlcmd.NewCmdControl(f, action, func(o *controlcmd.ControlOptions) error { got = o; return nil }))
		}
		_, stderr, code := execCommand(t, false, action+" job-1 --reason 'provider latency' --actor bob --json", capture)
		if code != cmdutil.ExitOK || got == nil {
			t.Fatalf("%s: exit %d: %s", action, code, stderr)
		}
		if got.Action != action || got.Request.JobID != "job-1" || got.Request.Reason != "provider latency" || got.Request.Actor != "bob" ||
			!got.JSON || got.Request.Now == nil || !got.Request.Now().Equal(fixedNow) {
			t.Errorf("%s: options %+v", action, *got)
		}
	}
}

func TestControlVerbsRefuseBadArgumentsAndUnknownJobsWithExit2(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	for _, verb := range []string{"status", "pause", "resume", "cancel"} {
		_, stderr, code := w.replayctl(t, verb)
		if code != cmdutil.ExitUsage || !strings.Contains(stderr, "exactly one argument, the job ID") {
			t.Errorf("%s without a job: exit %d, stderr %q; want 2", verb, code, stderr)
		}
		stdout, stderr, code := w.replayctl(t, verb+" job-does-not-exist")
		if code != cmdutil.ExitUsage || !strings.Contains(stderr, `no job "job-does-not-exist"`) {
			t.Errorf("%s of an unknown job: exit %d, stderr %q; want 2 naming the job\n%s", verb, code, stderr, stdout)
		}
		stdout, _, code = w.replayctl(t, verb+" --json job-does-not-exist")
		var res struct {
			ExitCode int `json:"exitCode"`
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != cmdutil.ExitUsage || res.ExitCode != cmdutil.ExitUsage {
			t.Errorf("%s --json of an unknown job: exit %d, stdout %q; want one JSON error with exitCode 2", verb, code, stdout)
		}
	}
}

func TestPauseResumeCancelOfAnInterruptedJob(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	m := w.Shadowed(6, "job-cli-control")
	// No consumer runs: the run publishes everything, sees no outcome and stops on the settle
	// timeout, leaving the job executing with no executor attached.
	stdout, stderr, code := w.replayctl(t, "execute --yes --settle-timeout 1s "+w.ManifestPath())
	if code != cmdutil.ExitGuardStopped || !strings.Contains(stdout, "stopped (stalled): 6 published targets, no outcome for 1s") {
		t.Fatalf("execute without a consumer: exit %d, want 4 on the stall:\n%s\n%s", code, stdout, stderr)
	}
	if s := w.JobStatus(m.ID); s != "executing" {
		t.Fatalf("a stalled job is %s, want executing", s)
	}
	published := w.StreamMessages()

	stdout, stderr, code = w.replayctl(t, "pause --json --reason 'provider latency' "+m.ID)
	if code != cmdutil.ExitOK {
		t.Fatalf("pause: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	var res job.ControlResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("pause --json: %v\n%s", err, stdout)
	}
	if res.Action != "pause" || res.From != "executing" || res.To != "paused" || res.ExecutorAttached || res.Counts.Targets != 6 {
		t.Fatalf("pause --json: %+v", res)
	}

	stdout, _, code = w.replayctl(t, "status "+m.ID)
	for _, want := range []string{"job " + m.ID + " of consumer billing: paused by alice", "because: provider latency",
		"executor: none attached", "run `replayctl execute " + m.ID + "` to continue publishing", "targets\t6", "remaining\t6"} {
		if code != cmdutil.ExitOK || !strings.Contains(stdout, want) {
			t.Errorf("status of the paused job: exit %d, lacks %q:\n%s", code, want, stdout)
		}
	}
	if r := w.statusJSON(t, m.ID); r.Status != "paused" || r.StatusReason != "provider latency" || r.StatusBy != "alice" {
		t.Errorf("status --json: status %q, reason %q, by %q", r.Status, r.StatusReason, r.StatusBy)
	}

	_, stderr, code = w.replayctl(t, "pause "+m.ID)
	if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "only an executing job can be paused") {
		t.Errorf("pause of a paused job: exit %d, stderr %q; want 3", code, stderr)
	}

	stdout, stderr, code = w.replayctl(t, "resume "+m.ID)
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "job "+m.ID+": paused -> executing") ||
		!strings.Contains(stdout, "no executor is attached: run `replayctl execute "+m.ID+"` to continue publishing") {
		t.Fatalf("resume: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	_, stderr, code = w.replayctl(t, "resume "+m.ID)
	if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "only a paused job can be resumed") {
		t.Errorf("resume of an executing job: exit %d, stderr %q; want 3", code, stderr)
	}

	stdout, stderr, code = w.replayctl(t, "cancel --reason 'wrong failure filter' "+m.ID)
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "job "+m.ID+": executing -> cancelled") ||
		!strings.Contains(stdout, "cancel never reverts: what was replayed before it stays replayed") {
		t.Fatalf("cancel: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	if s := w.JobStatus(m.ID); s != "cancelled" {
		t.Fatalf("job %s after cancel", s)
	}
	if n := w.QueryInt(`select count(*) from effect_versions where job_id = $1 and state = 'cancelled'`, m.ID); n != 1 {
		t.Error("the job's effect version is not cancelled: the consumer SDK would still accept its messages")
	}

	// A cancelled job is final: every verb refuses with exit 3, and nothing is published.
	for _, args := range []string{"cancel " + m.ID, "resume " + m.ID, "pause " + m.ID, "execute --yes " + w.ManifestPath()} {
		if _, stderr, code := w.replayctl(t, args); code != cmdutil.ExitGateRefused {
			t.Errorf("%s of a cancelled job: exit %d, stderr %q; want 3", args, code, stderr)
		}
	}
	if n := w.StreamMessages(); n != published {
		t.Errorf("%d messages published after the stall", n-published)
	}

	entries, err := w.Store.AuditList(w.Ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, a := range entries {
		if strings.HasPrefix(a.Action, "job.") {
			actions = append(actions, a.Action+" by "+a.Actor)
		}
	}
	if want := []string{"job.pause by alice", "job.resume by alice", "job.cancel by alice"}; !slices.Equal(actions, want) {
		t.Errorf("audit %v, want %v", actions, want)
	}
}

func TestControlOfAJobThatNeverRan(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	m := w.Shadowed(3, "job-cli-never-ran")

	_, stderr, code := w.replayctl(t, "resume "+m.ID)
	if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "only a paused job can be resumed") || !strings.Contains(stderr, "shadowed") {
		t.Errorf("resume of a shadowed job: exit %d, stderr %q; want 3", code, stderr)
	}
	_, stderr, code = w.replayctl(t, "pause "+m.ID)
	if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "only an executing job can be paused") {
		t.Errorf("pause of a shadowed job: exit %d, stderr %q; want 3", code, stderr)
	}
	if s := w.JobStatus(m.ID); s != "shadowed" {
		t.Fatalf("refused controls moved the job to %s", s)
	}

	stdout, stderr, code := w.replayctl(t, "cancel "+m.ID)
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "shadowed -> cancelled") || !strings.Contains(stdout, "cancel never reverts") {
		t.Fatalf("cancel of a shadowed job: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	// Without --reason the recorded reason says who did it, in words: "cancelled by alice".
	if r := w.statusJSON(t, m.ID); r.StatusReason != "cancelled by alice" {
		t.Errorf("the default cancel reason is %q, want %q", r.StatusReason, "cancelled by alice")
	}
	_, stderr, code = w.replayctl(t, "execute --yes "+w.ManifestPath())
	if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "already cancelled") || !strings.Contains(stderr, "plan a new job") {
		t.Fatalf("execute of a cancelled job: exit %d, stderr %q; want 3", code, stderr)
	}
	if n := w.StreamMessages(); n != 0 {
		t.Fatalf("%d messages published", n)
	}
}
