package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/jobhistory"
)

func TestPaceIsStoredAuditedAndUsedByTheNextExecute(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	m := w.Shadowed(3, "job-cli-pace")

	stdout, stderr, code := w.replayctl(t, "pace "+m.ID+" --rate 5 --max-in-flight 7 --reason 'provider asks for 5/s'")
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "job job-cli-pace (shadowed): --rate unset -> 5/s, --max-in-flight unset -> 7") ||
		!strings.Contains(stdout, "no executor is attached: `replayctl execute job-cli-pace` starts with it") {
		t.Fatalf("pace: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	// By manifest file too; one flag keeps the other's value.
	stdout, stderr, code = w.replayctl(t, "pace "+w.ManifestPath()+" --rate 0")
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "--rate 5/s -> 0 (no limit), --max-in-flight 7 -> 7") {
		t.Fatalf("pace of the file: exit %d:\n%s\n%s", code, stdout, stderr)
	}

	if stdout, _, _ := w.replayctl(t, "status "+m.ID); !strings.Contains(stdout, "pace: --rate 0 (no limit), --max-in-flight 7 (change it with `replayctl pace job-cli-pace`)") {
		t.Errorf("status does not show the pace:\n%s", stdout)
	}
	if r := w.statusJSON(t, m.ID); r.Pace.Rate == nil || *r.Pace.Rate != 0 || r.Pace.MaxInFlight == nil || *r.Pace.MaxInFlight != 7 {
		t.Errorf("status --json pace %+v", r.Pace)
	}

	stdout, _, _ = w.replayctl(t, "log --json "+m.ID)
	var entries []jobhistory.LogEntry
	if err := jsonItems(stdout, &entries); err != nil {
		t.Fatal(err)
	}
	var paces []jobhistory.LogEntry
	for _, e := range entries {
		if e.Action == "job.pace" {
			paces = append(paces, e)
		}
	}
	if len(paces) != 2 {
		t.Fatalf("%d job.pace entries, want 2: %+v", len(paces), entries)
	}
	first, _ := json.Marshal(paces[0].Details)
	if p := paces[0]; p.Actor != "alice" || p.Reason != "provider asks for 5/s" ||
		!strings.Contains(string(first), `"from":{"maxInFlight":1000,"rate":0}`) || !strings.Contains(string(first), `"to":{"maxInFlight":7,"rate":5}`) {
		t.Errorf("the first pace's audit entry: %+v %s", p, first)
	}

	// An execute that names neither flag starts with the stored pace; a flag it names wins.
	for args, want := range map[string][2]float64{
		"execute --dry-run --json " + m.ID:                    {0, 7},
		"execute --dry-run --json --rate 9 " + m.ID:           {9, 7},
		"execute --dry-run --json --max-in-flight 11 " + m.ID: {0, 11},
	} {
		stdout, stderr, code := w.replayctl(t, args)
		var r struct {
			Preflight struct {
				Rate        float64 `json:"rate"`
				MaxInFlight int     `json:"maxInFlight"`
			} `json:"preflight"`
		}
		if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != cmdutil.ExitOK ||
			r.Preflight.Rate != want[0] || r.Preflight.MaxInFlight != int(want[1]) {
			t.Errorf("%s: exit %d, %v, rate %v max in flight %d; want %v\n%s", args, code, err, r.Preflight.Rate, r.Preflight.MaxInFlight, want, stderr)
		}
	}
}

func TestPaceRefusesBadValuesAndFinishedJobs(t *testing.T) {
	t.Parallel()
	w, m := newShadowedWorld(t, 3, "job-cli-pace-refused")
	for args, want := range map[string]string{
		"pace " + m.ID:                        "pace needs --rate, --max-in-flight or both",
		"pace " + m.ID + " --rate -1":         "--rate -1: must be 0 (no limit)",
		"pace " + m.ID + " --max-in-flight 0": "--max-in-flight 0: must be between 1 and",
		"pace job-does-not-exist --rate 1":    `no job "job-does-not-exist"`,
		"pace --rate 1":                       "exactly one argument",
	} {
		if _, stderr, code := w.replayctl(t, args); code != cmdutil.ExitUsage || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 with %q", args, code, stderr, want)
		}
	}
	if stdout, stderr, code := w.replayctl(t, "execute --yes "+m.ID); code != cmdutil.ExitOK {
		t.Fatalf("execute: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	_, stderr, code := w.replayctl(t, "pace "+m.ID+" --rate 1")
	if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "is completed") || !strings.Contains(stderr, "final") {
		t.Errorf("pace of a completed job: exit %d, stderr %q; want 3", code, stderr)
	}
	// A refused pace changes nothing and audits nothing.
	if n := w.QueryInt(`select count(*) from audit where job_id = $1 and action = 'job.pace'`, m.ID); n != 0 {
		t.Errorf("%d job.pace entries for refused paces", n)
	}
}
