package cli

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/jobhistory"
)

func TestLogShowsTheAuditTrailInOrder(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	m := w.Shadowed(3, "job-cli-log")
	if _, stderr, code := w.replayctl(t, "cancel --reason 'wrong failure filter' "+m.ID); code != cmdutil.ExitOK {
		t.Fatalf("cancel: exit %d: %s", code, stderr)
	}

	// By job ID and by manifest file alike.
	for _, arg := range []string{m.ID, w.ManifestPath()} {
		stdout, stderr, code := w.replayctl(t, "log "+arg)
		if code != cmdutil.ExitOK {
			t.Fatalf("log %s: exit %d:\n%s\n%s", arg, code, stdout, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if lines[0] != "WHEN\tWHO\tACTION\tREASON\tDETAILS" {
			t.Errorf("header %q", lines[0])
		}
		var actions []string
		for _, l := range lines[1:] {
			actions = append(actions, strings.Split(l, "\t")[2])
		}
		if got := strings.Join(actions, " "); got != "plan shadow.started shadow.verdict job.cancel" {
			t.Errorf("log %s: actions %s, want plan, shadow.started, shadow.verdict, job.cancel in order:\n%s", arg, got, stdout)
		}
		last := strings.Split(lines[len(lines)-1], "\t")
		if last[1] != "alice" || last[3] != "wrong failure filter" || !strings.Contains(last[4], "from=shadowed to=cancelled") {
			t.Errorf("log %s: the cancel row is %q", arg, last)
		}
		if plan := strings.Split(lines[1], "\t"); plan[3] != m.Reason || !strings.Contains(plan[4], "targets=3") {
			t.Errorf("log %s: the plan row is %q, want the plan's reason %q and its targets", arg, plan, m.Reason)
		}
	}

	stdout, _, code := w.replayctl(t, "log --json "+m.ID)
	var entries []jobhistory.LogEntry
	if err := jsonItems(stdout, &entries); err != nil || code != cmdutil.ExitOK || len(entries) != 4 {
		t.Fatalf("log --json: exit %d, %v, %d entries:\n%s", code, err, len(entries), stdout)
	}
	if e := entries[3]; e.Action != "job.cancel" || e.Reason != "wrong failure filter" || e.Details["to"] != "cancelled" || e.ManifestDigest != m.Digest {
		t.Errorf("log --json: the cancel entry is %+v", e)
	}
	var raw []map[string]any
	_ = jsonItems(stdout, &raw)
	for _, key := range []string{"entryId", "at", "actor", "action", "reason", "manifestDigest", "details"} {
		if _, ok := raw[0][key]; !ok {
			t.Errorf("log --json lacks %q: %v", key, raw[0])
		}
	}

	stdout, stderr, code := runCommand(t, true, "log "+m.ID+" "+w.flags)
	if code != cmdutil.ExitOK {
		t.Fatalf("log on a terminal: exit %d: %s", code, stderr)
	}
	for _, line := range strings.Split(strings.TrimRight(stdout, "\n"), "\n") {
		if n := utf8.RuneCountInString(strings.TrimRight(line, " ")); n > iostreams.DefaultWidth {
			t.Errorf("a %d-column line:\n%s", n, line)
		}
	}
}

func TestLogOfAnUnknownJobExits2(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	_, stderr, code := w.replayctl(t, "log job-does-not-exist")
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, `no job "job-does-not-exist"`) {
		t.Errorf("log of an unknown job: exit %d, stderr %q; want 2 naming the job", code, stderr)
	}
	if _, stderr, code := w.replayctl(t, "log"); code != cmdutil.ExitUsage {
		t.Errorf("log without a job: exit %d, stderr %q; want 2", code, stderr)
	}
}
