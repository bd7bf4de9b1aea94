package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/manifest"
)

const selectReason = "'provider outage INC-77 fixed; replay the picked charges'"

// planJSON runs plan with args and --json and decodes what a test of the selection needs.
func planJSON(t *testing.T, w *execWorld, args string) (res struct {
	JobID     string              `json:"jobId"`
	Stats     manifest.Stats      `json:"stats"`
	Selection *manifest.Selection `json:"selection"`
	DryRun    bool                `json:"dryRun"`
	Warnings  []string            `json:"warnings"`
}, stderr string) {
	t.Helper()
	stdout, stderr, code := w.replayctl(t, "plan --json --new-consumer --consumer billing --stream DLQ_BILLING --reason "+selectReason+" "+args)
	if code != cmdutil.ExitOK {
		t.Fatalf("plan %s: exit %d\n%s\n%s", args, code, stdout, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	return res, stderr
}

// targetsOf reads the event IDs of the manifest at path.
func targetsOf(t *testing.T, path string) []string {
	t.Helper()
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return m.EventIDs
}

// A dry run prints the figures and records nothing; --where, --ids-from, --exclude-ids-from and
// --failure-group pick exactly the events they name, and the manifest records how.
func TestPlanSelectsExactlyThePickedEventsAndADryRunRecordsNothing(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	for i := range 20 {
		w.PublishDLQ(exectest.EventID(i), exectest.Order(i))
	}
	// Two more with other failure reasons, and one whose body is not JSON.
	for i, reason := range []string{"card 4f9a2c1e declined after 3012 ms", "card 77bb01aa declined after 2998 ms"} {
		msg := nats.NewMsg(exectest.DLQSubject)
		msg.Data, _ = json.Marshal(exectest.Order(100 + i))
		msg.Header.Set("Event-Id", exectest.EventID(100+i))
		msg.Header.Set("Dlq-Reason", reason)
		msg.Header.Set("Dlq-Original-Subject", exectest.OriginalSubject)
		if _, err := w.NATS.JS.PublishMsg(w.Ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	raw := nats.NewMsg(exectest.DLQSubject)
	raw.Data = []byte("not json at all")
	raw.Header.Set("Event-Id", "evt-raw")
	raw.Header.Set("Dlq-Reason", "provider timeout after 20s")
	raw.Header.Set("Dlq-Original-Subject", exectest.OriginalSubject)
	if _, err := w.NATS.JS.PublishMsg(w.Ctx, raw); err != nil {
		t.Fatal(err)
	}

	// --where: exactly the orders above 10000 cents; the raw body is counted apart.
	var big []string
	for _, i := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 100, 101} {
		if exectest.Order(i).AmountCents > 1000 {
			big = append(big, exectest.EventID(i))
		}
	}
	dry, _ := planJSON(t, w, `--dry-run --where 'payload.amountCents > 1000'`)
	if !dry.DryRun || dry.Stats.Targets != int64(len(big)) || dry.Stats.WhereNotJSON != 1 || !strings.Contains(strings.Join(dry.Warnings, "\n"), "not JSON") {
		t.Fatalf("dry run with --where: %+v; want %d targets and the raw body counted apart", dry, len(big))
	}
	if n := w.QueryInt(`select (select count(*) from jobs) + (select count(*) from audit) + (select count(*) from job_targets)`); n != 0 {
		t.Fatalf("a dry run recorded %d rows", n)
	}

	path := filepath.Join(t.TempDir(), "where.json")
	planJSON(t, w, `--where 'payload.amountCents > 1000' -o `+path)
	if got := targetsOf(t, path); !slices.Equal(got, big) {
		t.Fatalf("--where targets %v, want %v", got, big)
	}
	w.replayctl(t, "cancel --reason 'a selection test, not a replay' "+path)

	// --ids-from: three IDs and one no message carries; --exclude-ids-from takes one of them out.
	ids := filepath.Join(t.TempDir(), "ids.txt")
	// Saved by a Windows editor: a byte order mark before the first ID is no part of it.
	os.WriteFile(ids, []byte("\uFEFFevt-00003\n# from INC-77\nevt-00007\n\nevt-00011\nevt-99999\n"), 0o600)
	excl := filepath.Join(t.TempDir(), "excl.txt")
	os.WriteFile(excl, []byte("evt-00007\n"), 0o600)
	path = filepath.Join(t.TempDir(), "ids.json")
	res, _ := planJSON(t, w, "--ids-from "+ids+" --exclude-ids-from "+excl+" -o "+path)
	if got := targetsOf(t, path); !slices.Equal(got, []string{"evt-00003", "evt-00011"}) {
		t.Fatalf("--ids-from targets %v", got)
	}
	if sel := res.Selection; sel == nil || sel.IDs == nil || sel.IDs.Count != 4 || sel.IDs.NotFound != 1 || !slices.Equal(sel.IDs.NotFoundIDs, []string{"evt-99999"}) ||
		!strings.Contains(strings.Join(res.Warnings, "\n"), "evt-99999") {
		t.Fatalf("selection %+v, warnings %v: want the missing ID reported", res.Selection, res.Warnings)
	}
	if stdout, _, _ := w.replayctl(t, "show "+path); !strings.Contains(stdout, "evt-99999") && !strings.Contains(stdout, "ids-from") {
		t.Errorf("show does not show the selection:\n%s", stdout)
	}
	w.replayctl(t, "cancel --reason 'a selection test, not a replay' "+path)

	// --failure-group: the two card declines are one group whatever their numbers.
	path = filepath.Join(t.TempDir(), "group.json")
	planJSON(t, w, "--failure-group 'card <hex> declined after <n> ms' -o "+path)
	if got := targetsOf(t, path); !slices.Equal(got, []string{exectest.EventID(100), exectest.EventID(101)}) {
		t.Fatalf("--failure-group targets %v", got)
	}
}

// A --where that does not compile or costs too much, a --to-subject nothing captures or the DLQ
// itself captures, and a protected header to strip are refused with exit 2 before anything is
// recorded.
func TestPlanRefusesABadSelectionWithExit2(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	w.Seed(3)
	long := filepath.Join(t.TempDir(), "long.txt")
	os.WriteFile(long, []byte("evt-00001\n"+strings.Repeat("x", 1<<20+1)+"\n"), 0o600)
	for args, want := range map[string]string{
		`--ids-from ` + t.TempDir():                                          "is a directory",
		`--ids-from ` + long:                                                 "line 2 is longer than",
		`--ids-from - --exclude-ids-from -`:                                  "both read stdin",
		`--where 'payload.amountCents >'`:                                    "--where: ERROR: <input>:1:",
		`--where 'payload.amountCents + 1'`:                                  "must give true or false",
		`--to-subject nowhere.captures.this`:                                 "no JetStream stream on this server captures it",
		`--to-subject ` + exectest.DLQSubject:                                "the stream this plan reads",
		`--to-subject dlq.billing.elsewhere`:                                 "captured by stream DLQ_BILLING",
		`--where 'payload.items.exists(a, payload.items.exists(b, a == b))'`: "over the limit",
		`--strip-header Event-Id`:                                            "never stripped",
		`--strip-header Replay-Job`:                                          "never stripped",
		`--ids-from /nonexistent/ids.txt`:                                    "no such file",
	} {
		stdout, stderr, code := w.replayctl(t, "plan --dry-run --new-consumer --consumer billing --stream DLQ_BILLING --reason "+selectReason+" "+args)
		if code != cmdutil.ExitUsage || !strings.Contains(stderr, want) {
			t.Errorf("plan %s: exit %d, want 2 and %q:\n%s\n%s", args, code, want, stdout, stderr)
		}
	}
}

// --to-subject and --strip-header are recorded in the manifest, and the targets replay there.
func TestPlanRecordsTheRedirectAndTheStrippedHeaders(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	w.Seed(3)
	path := filepath.Join(t.TempDir(), "canary.json")
	res, _ := planJSON(t, w, "--to-subject billing.charge.canary --strip-header Trace-Id -o "+path)
	// No durable named after the consumer reads the stream that captures it: said, not refused.
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "no durable consumer named billing") {
		t.Errorf("warnings %v: want the missing durable said", res.Warnings)
	}
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Source.ToSubject != "billing.charge.canary" || !slices.Equal(m.Source.StripHeaders, []string{"Trace-Id"}) {
		t.Fatalf("source %+v", m.Source)
	}
	if n := w.QueryInt(`select count(*) from job_targets where original_subject = 'billing.charge.canary'`); n != 3 {
		t.Fatalf("%d targets replay to the canary subject, want 3", n)
	}
}

// An event whose replays by this tool were dead-lettered again twice is kept out as
// failedAfterReplay; once is not enough, and --include-failed-replays takes it in.
func TestTheLoopGuardKeepsOutAnEventWhoseReplaysFailedTwice(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	w.Seed(3)
	for i, times := range []int{2, 1} {
		for range times {
			msg := nats.NewMsg(exectest.DLQSubject)
			msg.Data, _ = json.Marshal(exectest.Order(50 + i))
			msg.Header.Set("Event-Id", exectest.EventID(50+i))
			msg.Header.Set("Dlq-Reason", "provider timeout after 20s")
			msg.Header.Set("Dlq-Original-Subject", exectest.OriginalSubject)
			msg.Header.Set("Replay-Job", "job-earlier")
			msg.Header.Set("Replay-Mode", "execute")
			if _, err := w.NATS.JS.PublishMsg(w.Ctx, msg); err != nil {
				t.Fatal(err)
			}
		}
	}
	res, _ := planJSON(t, w, "--dry-run")
	if res.Stats.FailedAfterReplay != 1 || res.Stats.Targets != 4 || !strings.Contains(strings.Join(res.Warnings, "\n"), exectest.EventID(50)) {
		t.Fatalf("loop guard: %+v %v; want evt-00050 kept out and 4 targets", res.Stats, res.Warnings)
	}
	if res, _ = planJSON(t, w, "--dry-run --include-failed-replays"); res.Stats.FailedAfterReplay != 0 || res.Stats.Targets != 5 {
		t.Fatalf("--include-failed-replays: %+v; want 5 targets", res.Stats)
	}
}

// show gives each message plan could not use its own reason: a wildcard subject is not a
// missing header.
func TestShowSaysWhyEachUnusableMessageWasKeptOut(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	w.Seed(2)
	for _, h := range []map[string]string{
		{"Event-Id": "evt-wild", "Dlq-Reason": "timeout", "Dlq-Original-Subject": "billing.*"},
		{"Dlq-Reason": "timeout", "Dlq-Original-Subject": exectest.OriginalSubject},
	} {
		msg := nats.NewMsg(exectest.DLQSubject)
		msg.Data = []byte(`{"orderId":"x"}`)
		for k, v := range h {
			msg.Header.Set(k, v)
		}
		if _, err := w.NATS.JS.PublishMsg(w.Ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "job.json")
	planJSON(t, w, "-o "+path)
	stdout, _, _ := w.replayctl(t, "show "+path)
	var wild, missing bool
	for _, line := range strings.Split(stdout, "\n") {
		wild = wild || strings.HasPrefix(line, "3\t") && strings.Contains(line, "billing.*")
		missing = missing || strings.HasPrefix(line, "4\t") && strings.Contains(line, "Event-Id")
	}
	if !wild || !missing {
		t.Fatalf("show does not give each unusable message its reason:\n%s", stdout)
	}
}
