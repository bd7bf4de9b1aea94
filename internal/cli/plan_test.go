package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cli/plancmd"
	"github.com/replayctl/replayctl/internal/cli/shared"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/natstest"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/manifest"
)

const planReason = "payments provider outage INC-4521 fixed; re-run failed charges"

// planEnv is a migrated ledger and a listening NATS server with a small DLQ, reached through the
// global flags exactly as an operator's command line would.
type planEnv struct {
	flags string
	dir   string
	nats  *natstest.Env
}

// newLedgerAndDLQ migrates a fresh ledger schema with the migrate verb and starts a listening
// NATS server with an empty DLQ stream on dlq.>.
func newLedgerAndDLQ(t *testing.T) (dbURL string, env *natstest.Env) {
	t.Helper()
	dbURL = pgtest.URL(t)
	if _, stderr, code := runCommand(t, false, "migrate --database-url '"+dbURL+"'"); code != cmdutil.ExitOK {
		t.Fatalf("migrate: exit %d: %s", code, stderr)
	}
	env = natstest.Start(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}}); err != nil {
		t.Fatal(err)
	}
	return dbURL, env
}

func newPlanEnv(t *testing.T) *planEnv {
	t.Helper()
	dbURL, env := newLedgerAndDLQ(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, id := range []string{"e1", "e2", "e3"} {
		msg := nats.NewMsg("dlq.billing")
		msg.Data = []byte(`{"n":` + string(rune('1'+i)) + `}`)
		msg.Header.Set("Event-Id", id)
		msg.Header.Set("Dlq-Reason", "provider timeout")
		msg.Header.Set("Dlq-Original-Subject", "billing.charge.requested")
		if _, err := env.JS.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	return &planEnv{
		flags: "--database-url '" + dbURL + "' --nats-url " + env.Server.ClientURL() + " --actor alice",
		dir:   t.TempDir(),
		nats:  env,
	}
}

func (e *planEnv) plan(t *testing.T, isTTY bool, args string) (stdout, stderr string, code int) {
	t.Helper()
	// The env's ledger starts empty: a first replay of billing.
	return runCommand(t, isTTY, "plan "+e.flags+" --consumer billing --new-consumer --stream DLQ "+args)
}

func TestPlanWritesManifestAndPrintsSummary(t *testing.T) {
	t.Parallel()
	e := newPlanEnv(t)
	out := filepath.Join(e.dir, "job.json")
	stdout, stderr, code := e.plan(t, false, "--reason '"+planReason+"' --ticket INC-4521 -o "+out)
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m, err := manifest.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Stats.Targets != 3 || m.CreatedBy != "alice" || m.EffectVersion.To != 1 || !m.CreatedAt.Equal(fixedNow) {
		t.Fatalf("manifest %+v", m)
	}
	for _, want := range []string{"scanned\t3", "targets\t3", "provider timeout\t3", "planned job " + m.ID + ": 3 targets"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "replayctl show "+out) {
		t.Errorf("stderr lacks the next step:\n%s", stderr)
	}
	stdout, stderr, code = runCommand(t, false, "validate --ledger "+e.flags+" "+out)
	if code != cmdutil.ExitOK {
		t.Fatalf("validate --ledger of a fresh plan: exit %d: %s %s", code, stdout, stderr)
	}
}

func TestPlanJSON(t *testing.T) {
	t.Parallel()
	e := newPlanEnv(t)
	stdout, stderr, code := e.plan(t, false, "--json --reason '"+planReason+"' --max 2 -o "+filepath.Join(e.dir, "job.json"))
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		JobID    string         `json:"jobId"`
		Digest   string         `json:"manifestDigest"`
		Stats    manifest.Stats `json:"stats"`
		Warnings []string       `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, stdout)
	}
	if res.Stats.Targets != 2 || res.Stats.OverMax != 1 || !strings.HasPrefix(res.Digest, "sha256:") || len(res.Warnings) != 1 {
		t.Fatalf("JSON result %+v", res)
	}
}

func TestPlanRefusalsExitTwoAndRecordNothing(t *testing.T) {
	t.Parallel()
	e := newPlanEnv(t)
	out := filepath.Join(e.dir, "job.json")
	if _, stderr, code := e.plan(t, false, "--reason '"+planReason+"' -o "+out); code != cmdutil.ExitOK {
		t.Fatalf("first plan: exit %d: %s", code, stderr)
	}
	// --force: a refused plan leaves the file alone even where it was allowed to replace it.
	cases := []struct{ name, args, says string }{
		{"no reason", "--force -o " + out, "--reason"},
		{"trivial reason", "--force --reason replay -o " + out, "--reason"},
		{"unknown stream", "--force --reason '" + planReason + "' --stream NOPE -o " + out, "NOPE"},
		{"bad time", "--force --reason '" + planReason + "' --since yesterday -o " + out, "--since"},
		{"existing manifest without --force", "--reason '" + planReason + "' -o " + out, "pass --force to replace it"},
	}
	before, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := e.plan(t, false, c.args)
			if code != cmdutil.ExitUsage {
				t.Fatalf("exit %d, want %d: %s", code, cmdutil.ExitUsage, stderr)
			}
			if !strings.Contains(stderr, c.says) {
				t.Errorf("stderr does not name %q: %s", c.says, stderr)
			}
		})
	}
	after, err := os.ReadFile(out)
	if err != nil || string(after) != string(before) {
		t.Fatalf("a refused plan changed %s (%v)", out, err)
	}
}

func TestPlanOverwritesAnExistingManifestOnlyWithForce(t *testing.T) {
	t.Parallel()
	e := newPlanEnv(t)
	out := filepath.Join(e.dir, "job.json")
	if err := os.WriteFile(out, []byte("an earlier manifest\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := e.plan(t, false, "--json --reason '"+planReason+"' -o "+out)
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, "-o "+out+": the file exists") || !strings.Contains(stderr, "pass --force to replace it") {
		t.Fatalf("plan over an existing file: exit %d, want 2 saying what to do:\n%s\n%s", code, stdout, stderr)
	}
	if data, _ := os.ReadFile(out); string(data) != "an earlier manifest\n" {
		t.Fatalf("the refused plan changed %s: %q", out, data)
	}
	if _, stderr, code := e.plan(t, false, "--force --reason '"+planReason+"' -o "+out); code != cmdutil.ExitOK {
		t.Fatalf("plan --force: exit %d: %s", code, stderr)
	}
	if _, err := manifest.Load(out); err != nil {
		t.Fatalf("plan --force did not write its manifest: %v", err)
	}
}

func TestPlanVersionMustBeAboveTheLedgers(t *testing.T) {
	t.Parallel()
	e := newPlanEnv(t)
	// Planned jobs do not claim versions; the ledger's effects (and registered versions) do.
	stdout, stderr, code := e.plan(t, false, "--json --reason '"+planReason+"' --effect-version 3 -o "+filepath.Join(e.dir, "a.json"))
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	dbURL := strings.Split(strings.TrimPrefix(e.flags, "--database-url '"), "'")[0]
	ledgertest.InsertEffects(t, pgtest.PoolAt(t, dbURL), ledgertest.Effect{EventID: "e1", Version: 2})
	_, stderr, code = e.plan(t, false, "--reason '"+planReason+"' --effect-version 2 -o "+filepath.Join(e.dir, "b.json"))
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, "not greater than 2") || !strings.Contains(stderr, "omit --effect-version to use 3") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
}

func TestPlanFlagsReachTheRequest(t *testing.T) {
	t.Parallel()
	var got *shared.PlanOptions
	_, stderr, code := execCommand(t, false, "plan --consumer c --stream S --reason r --subject 'dlq.>' --since 6h --until 2026-12-02T09:00:00Z "+
		"--failure-match 'time.*out' --max 5 --effect-version 7 --write-forbidden --header-event-id X-Id -o j.json --actor bob",
		func(f *cmdutil.Factory, root *cobra.Command) {
			replaceCommand(root, plancmd.NewCmdPlan(f, func(o *shared.PlanOptions) error { got = o; return nil }))
		})
	if code != cmdutil.ExitOK || got == nil {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := got.Request
	if r.Consumer != "c" || r.Stream != "S" || r.SubjectFilter != "dlq.>" || r.FailureMatch != "time.*out" || r.Max != 5 ||
		r.EffectVersion != 7 || !r.WriteForbidden || r.Headers.EventID != "X-Id" || r.OutputPath != "j.json" || r.Actor != "bob" ||
		got.Since != "6h" || got.Until != "2026-12-02T09:00:00Z" {
		t.Fatalf("request %+v since %q until %q", r, got.Since, got.Until)
	}
}

func TestParseTimeFlag(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"6h":                   "2026-12-02T03:30:00Z",
		"2026-12-01":           "2026-12-01T00:00:00Z",
		"2026-12-01T10:00:00Z": "2026-12-01T10:00:00Z",
	} {
		got, err := cmdutil.ParseTimeFlag("since", in, fixedNow)
		if err != nil || got.UTC().Format(time.RFC3339) != want {
			t.Errorf("parseTimeFlag(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	if _, err := cmdutil.ParseTimeFlag("since", "-6h", fixedNow); err == nil {
		t.Error("a negative duration was accepted")
	}
}

func TestPlanShowsProgressOnlyOnATerminal(t *testing.T) {
	t.Parallel()
	e := newPlanEnv(t)
	// Each plan takes one event: the first job's targets are kept out of the second's.
	_, stderr, code := e.plan(t, true, "--max 1 --reason '"+planReason+"' -o "+filepath.Join(e.dir, "tty.json"))
	if code != cmdutil.ExitOK || !strings.Contains(stderr, "scanning DLQ") {
		t.Fatalf("TTY: exit %d, stderr without a progress bar:\n%s", code, stderr)
	}
	_, stderr, code = e.plan(t, false, "--max 1 --reason '"+planReason+"' -o "+filepath.Join(e.dir, "ci.json"))
	if code != cmdutil.ExitOK || strings.Contains(stderr, "scanning DLQ") {
		t.Fatalf("no TTY: exit %d, stderr with a progress bar:\n%s", code, stderr)
	}
}

// TestPlanWithoutTargetsExitsTwoAndSaysWhy: a source stream planned as a DLQ used to write a
// manifest with 0 targets and exit 0 (issue 14).
func TestPlanWithoutTargetsExitsTwoAndSaysWhy(t *testing.T) {
	t.Parallel()
	dbURL, env := newLedgerAndDLQ(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "BILLING", Subjects: []string{"billing.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		msg := nats.NewMsg("billing.charge.requested")
		msg.Data = []byte(`{}`)
		msg.Header.Set("Event-Id", "evt-"+strconv.Itoa(i))
		if _, err := env.JS.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "job.json")
	_, stderr, code := runCommand(t, false, "plan --database-url '"+dbURL+"' --nats-url "+env.Server.ClientURL()+
		" --consumer billing --new-consumer --stream BILLING --reason '"+planReason+"' -o "+out)
	want := "300 of 300 messages have no Dlq-Original-Subject header: is BILLING a source stream? Use --backfill"
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 saying %q", code, stderr, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a plan without targets wrote %s", out)
	}
}

// plan --consumer biling for a consumer the ledger has never seen is a typo until said otherwise:
// exit 2, the known consumers, the nearest of them, and --new-consumer for a first replay.
func TestPlanRefusesAnUnknownConsumerWithTheKnownNames(t *testing.T) {
	t.Parallel()
	e := newPlanEnv(t)
	if _, stderr, code := e.plan(t, false, "--max 1 --reason '"+planReason+"' -o "+filepath.Join(e.dir, "first.json")); code != cmdutil.ExitOK {
		t.Fatalf("first replay with --new-consumer: exit %d:\n%s", code, stderr)
	}
	out := filepath.Join(e.dir, "typo.json")
	stdout, stderr, code := runCommand(t, false, "plan --json "+e.flags+" --consumer biling --stream DLQ --reason '"+planReason+"' -o "+out)
	if code != cmdutil.ExitUsage {
		t.Fatalf("plan --consumer biling: exit %d, want %d:\n%s", code, cmdutil.ExitUsage, stderr)
	}
	for _, want := range []string{"biling", "did you mean billing?", "known consumers: billing", "pass --new-consumer"} {
		if !strings.Contains(stderr, want) || !strings.Contains(stdout, want) {
			t.Errorf("plan --consumer biling does not say %q:\nstdout %s\nstderr %s", want, stdout, stderr)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the refused plan wrote %s", out)
	}
	// billing is known now (its job): no flag needed.
	if _, stderr, code := runCommand(t, false, "plan "+e.flags+" --consumer billing --stream DLQ --max 1 --reason '"+planReason+"' -o "+filepath.Join(e.dir, "second.json")); code != cmdutil.ExitOK {
		t.Fatalf("plan of the known consumer billing: exit %d:\n%s", code, stderr)
	}
}
