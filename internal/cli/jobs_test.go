package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

// jobsWorld has three jobs: one executed to the end by the billing consumer (its counts come from
// the ledger), a paused job of another consumer a day before the fixed clock and a cancelled
// billing job five days before it.
func jobsWorld(t *testing.T) (*execWorld, string) {
	t.Helper()
	w, m := newShadowedWorld(t, 6, "job-cli-jobs-done")
	if stdout, stderr, code := w.replayctl(t, "execute --yes "+w.ManifestPath()); code != cmdutil.ExitOK {
		t.Fatalf("execute: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	for _, j := range []ledger.Job{
		{ID: "job-cli-jobs-shipping", Consumer: "shipping", Status: jobtype.Executing, CreatedAt: fixedNow.Add(-24 * time.Hour)},
		{ID: "job-cli-jobs-old", Consumer: "billing", Status: jobtype.Cancelled, CreatedAt: fixedNow.Add(-5 * 24 * time.Hour)},
	} {
		j.ManifestDigest, j.EffectVersionFrom, j.EffectVersionTo = "sha256:x", 3, 4
		j.Reason, j.Stream, j.Targets, j.LedgerStateDigest, j.CreatedBy = "planned by hand", "DLQ", 2, "sha256:y", "bob"
		if err := ledger.JobsInsert(w.Ctx, w.DB, j); err != nil {
			t.Fatal(err)
		}
	}
	if err := ledger.JobsTransition(w.Ctx, w.DB, ledger.JobTransition{ID: "job-cli-jobs-shipping",
		From: []jobtype.Status{jobtype.Executing}, To: jobtype.Paused, By: "carol",
		Reason: "shipping provider rate-limits us; " + strings.Repeat("a long story ", 20)}); err != nil {
		t.Fatal(err)
	}
	return w, fmt.Sprintf("%d->%d", m.EffectVersion.From, m.EffectVersion.To)
}

// jobIDs returns the first cell of each row of a plain table, header left out.
func jobIDs(stdout string) []string {
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n")[1:] {
		ids = append(ids, strings.Split(line, "\t")[0])
	}
	return ids
}

func TestJobsListsFiltersAndCounts(t *testing.T) {
	t.Parallel()
	w, versions := jobsWorld(t)

	stdout, stderr, code := w.replayctl(t, "jobs")
	if code != cmdutil.ExitOK {
		t.Fatalf("jobs: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if want := "JOB\tCONSUMER\tSTATUS\tVER\tTARGETS\tOK/FAIL/UNC\tBY\tWHEN\tREASON"; lines[0] != want {
		t.Errorf("header %q, want %q", lines[0], want)
	}
	if got := strings.Join(jobIDs(stdout), " "); got != "job-cli-jobs-done job-cli-jobs-shipping job-cli-jobs-old" {
		t.Errorf("jobs lists %s, want the three newest first", got)
	}
	for _, want := range []string{
		"job-cli-jobs-done\tbilling\tcompleted\t" + versions + "\t6\t6/0/0\t",
		"job-cli-jobs-shipping\tshipping\tpaused\t3->4\t2\t0/0/0\tcarol\t",
		"job-cli-jobs-old\tbilling\tcancelled\t3->4\t2\t0/0/0\tbob\t2026-11-27 09:30\tplanned by hand",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("jobs lacks %q:\n%s", want, stdout)
		}
	}

	for args, want := range map[string]string{
		"jobs --consumer billing":                  "job-cli-jobs-done job-cli-jobs-old",
		"jobs --status paused":                     "job-cli-jobs-shipping",
		"jobs --since 2d":                          "job-cli-jobs-done job-cli-jobs-shipping",
		"jobs --since 2026-11-28T00:00:00Z":        "job-cli-jobs-done job-cli-jobs-shipping",
		"jobs --limit 1":                           "job-cli-jobs-done",
		"jobs --consumer billing --status planned": "",
	} {
		stdout, stderr, code := w.replayctl(t, args)
		if got := strings.Join(jobIDs(stdout), " "); code != cmdutil.ExitOK || got != want {
			t.Errorf("%s: exit %d, lists %q, want %q\n%s", args, code, got, want, stderr)
		}
	}
}

func TestJobsJSONHasStableFieldNames(t *testing.T) {
	t.Parallel()
	w, _ := jobsWorld(t)
	stdout, stderr, code := w.replayctl(t, "jobs --json --status paused")
	if code != cmdutil.ExitOK {
		t.Fatalf("jobs --json: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	var jobs []map[string]any
	if err := jsonItems(stdout, &jobs); err != nil || len(jobs) != 1 {
		t.Fatalf("jobs --json: %v, %d jobs:\n%s", err, len(jobs), stdout)
	}
	j := jobs[0]
	for _, key := range []string{"jobId", "consumer", "status", "source", "effectVersion", "targets", "completed", "failed",
		"uncertain", "skipped", "remaining", "reason", "ticket", "createdBy", "createdAt", "statusBy", "statusAt", "statusReason"} {
		if _, ok := j[key]; !ok {
			t.Errorf("jobs --json lacks %q: %v", key, j)
		}
	}
	if j["jobId"] != "job-cli-jobs-shipping" || j["statusBy"] != "carol" || !strings.HasPrefix(j["statusReason"].(string), "shipping provider") ||
		j["effectVersion"].(map[string]any)["to"] != 4.0 || j["createdAt"] != "2026-12-01T09:30:00Z" {
		t.Errorf("jobs --json: %v", j)
	}

	stdout, _, code = w.replayctl(t, "jobs --json --status planned")
	var none []map[string]any
	if code != cmdutil.ExitOK || jsonItems(stdout, &none) != nil || none == nil || len(none) != 0 {
		t.Errorf("jobs --json matching nothing: exit %d, %q; want no items", code, stdout)
	}
}

func TestJobsRefusesUnknownStatusAndConsumer(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	_, stderr, code := w.replayctl(t, "jobs --status pausd")
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, `no job status "pausd"; did you mean paused?`) ||
		!strings.Contains(stderr, "planned, shadowing, shadowed, executing, paused, completed, cancelled, failed") {
		t.Errorf("jobs --status pausd: exit %d, stderr %q; want 2 with the known statuses", code, stderr)
	}
	_, stderr, code = w.replayctl(t, "jobs --consumer biling")
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, "unknown consumer") {
		t.Errorf("jobs --consumer biling: exit %d, stderr %q; want 2", code, stderr)
	}
	for _, args := range []string{"jobs --since yesterday", "jobs --limit -1", "jobs extra"} {
		if _, stderr, code := w.replayctl(t, args); code != cmdutil.ExitUsage {
			t.Errorf("%s: exit %d, stderr %q; want 2", args, code, stderr)
		}
	}
}

func TestJobsTableFits100ColumnsOnATerminal(t *testing.T) {
	t.Parallel()
	w, _ := jobsWorld(t)
	stdout, stderr, code := runCommand(t, true, "jobs "+w.flags)
	if code != cmdutil.ExitOK {
		t.Fatalf("jobs: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	for _, line := range strings.Split(strings.TrimRight(stdout, "\n"), "\n") {
		if n := utf8.RuneCountInString(strings.TrimRight(line, " ")); n > iostreams.DefaultWidth {
			t.Errorf("a %d-column line:\n%s", n, line)
		}
	}
	if !strings.Contains(stdout, "shipping provider rate-limits us; a long story") || !strings.Contains(stdout, "…") {
		t.Errorf("the long reason is not shown cut:\n%s", stdout)
	}
}
