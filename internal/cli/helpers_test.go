package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/manifest"
)

// fixedNow is the clock of every command run by the tests.
var fixedNow = time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)

// runCommand runs replayctl with args (split like a shell would, quotes included) through the
// same path as Execute, on buffered streams that are TTYs or not, with a fixed clock.
func runCommand(t *testing.T, isTTY bool, args string) (stdout, stderr string, exitCode int) {
	t.Helper()
	return execCommand(t, isTTY, args, nil)
}

// execCommand is runCommand with a hook that may change the Factory or the command tree (to
// install a runF) before the command runs.
func execCommand(t *testing.T, isTTY bool, args string, setup func(f *cmdutil.Factory, root *cobra.Command)) (stdout, stderr string, exitCode int) {
	t.Helper()
	return execCommandIO(t, isTTY, "", args, setup)
}

// execCommandWithStdin is execCommand with stdin holding input, for a prompt's answer.
func execCommandWithStdin(t *testing.T, isTTY bool, stdin, args string) (stdout, stderr string, exitCode int) {
	t.Helper()
	return execCommandIO(t, isTTY, stdin, args, nil)
}

func execCommandIO(t *testing.T, isTTY bool, stdin, args string, setup func(f *cmdutil.Factory, root *cobra.Command)) (stdout, stderr string, exitCode int) {
	t.Helper()
	ios, in, out, errOut := iostreams.Test()
	in.WriteString(stdin)
	ios.SetStdinTTY(isTTY)
	ios.SetStdoutTTY(isTTY)
	ios.SetStderrTTY(isTTY)
	f := cmdutil.NewFactory(ios)
	f.Now = func() time.Time { return fixedNow }
	root := NewCmdRoot(f)
	if setup != nil {
		setup(f, root)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	argv := splitArgs(t, args)
	code := run(ctx, f, root, argv)
	if setup == nil && slices.Contains(argv, "--json") && !slices.Contains(argv, "--jq") {
		checkDocuments(t, out.String())
	}
	return out.String(), errOut.String(), code
}

// replaceCommand swaps root's subcommand of the same name for c.
func replaceCommand(root, c *cobra.Command) {
	for _, old := range root.Commands() {
		if old.Name() == c.Name() {
			root.RemoveCommand(old)
		}
	}
	root.AddCommand(c)
}

// splitArgs splits s on spaces outside single or double quotes.
func splitArgs(t *testing.T, s string) []string {
	t.Helper()
	var (
		args  []string
		cur   strings.Builder
		inArg bool
		quote rune
	)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inArg = r, true
		case r == ' ':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteRune(r)
			inArg = true
		}
	}
	if quote != 0 {
		t.Fatalf("unterminated quote in %q", s)
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args
}

// testManifest returns a sealed, valid manifest whose figures are all distinct, so a test can
// find each one in the output: 12 targets, 25 uncertain exclusions, one in flight, one conflict.
func testManifest(t *testing.T) *manifest.Manifest {
	t.Helper()
	ids := make([]string, 12)
	for i := range ids {
		ids[i] = fmt.Sprintf("evt-%03d", i)
	}
	uncertain := make([]manifest.LedgerExclusion, 25)
	for i := range uncertain {
		uncertain[i] = manifest.LedgerExclusion{EventID: fmt.Sprintf("evt-u-%02d", i), EffectVersion: 3, State: "uncertain"}
	}
	since := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	lease := time.Date(2026, 12, 2, 9, 45, 0, 0, time.UTC)
	m := &manifest.Manifest{
		APIVersion: manifest.APIVersion,
		Kind:       manifest.KindManifest,
		ID:         "job-20261202-test01",
		CreatedAt:  fixedNow,
		CreatedBy:  "alice",
		Reason:     "payments provider outage INC-4521 fixed; re-run failed charges",
		Ticket:     "INC-4521",
		Consumer:   "billing",
		Source: manifest.Source{
			Stream:        "DLQ_BILLING",
			SubjectFilter: "dlq.billing.>",
			Since:         &since,
			FailureMatch:  "timeout|503",
			Headers: manifest.Headers{
				EventID: "Event-Id", Reason: "Dlq-Reason", OriginalSubject: "Dlq-Original-Subject",
				Attempts: "Dlq-Attempts", FailedAt: "Dlq-Failed-At",
			},
			FirstSeq:      101,
			LastSeq:       1334,
			StreamLastSeq: 1400,
		},
		EffectVersion: manifest.EffectVersion{From: 3, To: 4},
		Stats: manifest.Stats{
			Scanned:                    1234,
			MissingEventID:             7,
			InvalidEventID:             6,
			NotMatchingFailureFilter:   41,
			Candidates:                 987,
			RepeatedInSource:           55,
			DuplicateInSource:          2,
			LedgerPayloadMismatch:      1,
			AlreadyCompleted:           911,
			CompletedUnderOlderVersion: 5,
			AlreadyCompletedRatio:      0.9281,
			ExcludedUncertain:          25,
			ExcludedInFlight:           1,
			OverMax:                    30,
			Targets:                    12,
			FailureReasons:             map[string]int64{"bad gateway": 1, "timeout": 7, "provider 503": 4},
		},
		ExpectedExternalCalls: 29,
		ExternalCallsEstimate: manifest.CallsEstimate{
			Method: "recorded effect_count", KnownTargets: 8, KnownCalls: 21,
			EstimatedTargets: 4, MeanPerEffect: 2, SampleSize: 77,
		},
		Excluded: manifest.Excluded{
			Uncertain: uncertain,
			InFlight: []manifest.LedgerExclusion{{EventID: "evt-f-00", EffectVersion: 3, State: "processing",
				LeaseOwner: "billing-7f9c", LeaseExpiresAt: &lease}},
			Conflicts:          []manifest.Conflict{{EventID: "evt-c-00", Where: "source", PayloadHashes: []string{"sha256:aa", "sha256:bb"}}},
			MissingEventIDSeqs: []uint64{117, 240},
		},
		EventIDs: ids,
	}
	if err := manifest.Seal(m); err != nil {
		t.Fatal(err)
	}
	return m
}

// writeManifest writes m to job.json in a fresh directory and returns the path.
func writeManifest(t *testing.T, m *manifest.Manifest) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "job.json")
	if err := manifest.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	return path
}

// editFile replaces the first old in the file at path with new, as an operator's editor would.
func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	writeEdited(t, path, path, old, new)
}

// execWorld is an exectest world (fresh ledger, listening NATS with the billing DLQ and stream,
// the billing provider) reached through the global flags, as an operator's command line would.
type execWorld struct {
	*exectest.Env
	// flags are --database-url, --nats-url and --actor alice.
	flags string
}

func newExecWorld(t *testing.T) *execWorld {
	t.Helper()
	e := exectest.New(t, exectest.Options{Listen: true})
	return &execWorld{Env: e,
		flags: "--database-url '" + e.DatabaseURL + "' --nats-url " + e.NATS.Server.ClientURL() + " --actor alice"}
}

// newShadowedWorld is newExecWorld with an n-target job that passed shadow and the billing
// consumer running: where most execute tests start.
func newShadowedWorld(t *testing.T, n int, jobID string) (*execWorld, *manifest.Manifest) {
	t.Helper()
	w := newExecWorld(t)
	m := w.Shadowed(n, jobID)
	w.RunConsumer(w.NewConsumer(nil, nil))
	return w, m
}

// replayctl runs args with the world's flags, off a terminal.
func (w *execWorld) replayctl(t *testing.T, args string) (stdout, stderr string, exitCode int) {
	t.Helper()
	return runCommand(t, false, args+" "+w.flags)
}

// statusJSON runs `status --json JOB` and decodes its one JSON document.
func (w *execWorld) statusJSON(t *testing.T, jobID string) executor.StatusReport {
	t.Helper()
	stdout, stderr, code := w.replayctl(t, "status --json "+jobID)
	if code != cmdutil.ExitOK {
		t.Fatalf("status --json: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	var r executor.StatusReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("status --json: stdout is not one JSON document: %v\n%s", err, stdout)
	}
	return r
}

// assertChargedOnce fails unless each of the seeded orders 0..n-1 was charged exactly once and
// no other order was charged: no duplicate external effect, no lost target.
func (w *execWorld) assertChargedOnce(t *testing.T, n int) {
	t.Helper()
	if dups := w.DuplicateCharges(); len(dups) > 0 {
		t.Errorf("duplicate external effects: %v", dups)
	}
	var missing []string
	for i := range n {
		if id := exectest.Order(i).OrderID; w.Provider.Charges(id) == 0 {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d orders were never charged, e.g. %v", len(missing), n, missing[:min(5, len(missing))])
	}
	if got := len(w.Provider.ChargedOrders()); got != n {
		t.Errorf("%d orders charged, want %d", got, n)
	}
}

// waitUntil polls cond every 20ms until it holds, failing the test after limit.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// jsonItems decodes the items of a list document (jobs, log) into v.
func jsonItems(stdout string, v any) error {
	var doc struct {
		Items json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		return err
	}
	return json.Unmarshal(doc.Items, v)
}
