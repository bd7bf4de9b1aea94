package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/cli/shadowcmd"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/natstest"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/shadow"
)

func TestShadowFlags(t *testing.T) {
	t.Parallel()
	var got *shadowcmd.ShadowOptions
	capture := func(f *cmdutil.Factory, root *cobra.Command) {
		replaceCommand(root, shadowcmd.NewCmdShadow(f, func(o *shadowcmd.ShadowOptions) error { got = o; return nil }))
	}
	if _, stderr, code := execCommand(t, false, "shadow job.json --actor bob", capture); code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := shadow.Options{Concurrency: 16, Sample: 100, Timeout: 5 * time.Second, Thresholds: shadow.DefaultThresholds(), Actor: "bob"}
	if got.ManifestPath != "job.json" || got.ReportPath != "" || !reflect.DeepEqual(got.Request, want) {
		t.Fatalf("defaults: path %q report %q request %+v", got.ManifestPath, got.ReportPath, got.Request)
	}

	args := "shadow job.json --concurrency 4 --sample 20 --timeout 750ms --ignore-field processedAt --ignore-field 'lines[*].sku' " +
		"--report out.json --max-error-ratio 0.01 --max-unanswered-ratio 0.02 --max-failure-ratio 0.03 --max-changed-ratio 0.5 --max-calls-over 0.2"
	if _, stderr, code := execCommand(t, false, args, capture); code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want = shadow.Options{Concurrency: 4, Sample: 20, Timeout: 750 * time.Millisecond,
		IgnoreFields: []string{"processedAt", "lines[*].sku"}, Actor: got.Request.Actor,
		Thresholds: shadow.Thresholds{MaxErrorRatio: 0.01, MaxUnansweredRatio: 0.02, MaxFailureRatio: 0.03, MaxChangedRatio: 0.5, MaxCallsOverExpected: 0.2}}
	if got.ReportPath != "out.json" || !reflect.DeepEqual(got.Request, want) {
		t.Fatalf("flags: report %q request %+v", got.ReportPath, got.Request)
	}
}

func TestShadowRefusesBadInputBeforeConnecting(t *testing.T) {
	t.Parallel()
	path := writeManifest(t, testManifest(t))
	for _, tc := range []struct{ args, want string }{
		{"shadow", "exactly one argument"},
		{"shadow " + path + " --concurrency 0", "concurrency"},
		{"shadow " + path + " --timeout 0s", "timeout"},
		{"shadow " + path + " --sample -1", "sample"},
		{"shadow " + path + " --max-changed-ratio 1.5", "--max-changed-ratio"},
		{"shadow " + path + " --ignore-field 'a..b'", "ignore-field"},
		{"shadow " + filepath.Join(t.TempDir(), "missing.json"), "no such file"},
	} {
		_, stderr, code := execCommand(t, false, tc.args, noConnections(t))
		if code != cmdutil.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 mentioning %q", tc.args, code, stderr, tc.want)
		}
	}
}

// shadowEnv is a planned billing job on a listening NATS server and a migrated ledger, with the
// billing consumer's shadow responder served at version 2.
type shadowEnv struct {
	flags, manifest string
	provider        *billing.Provider
	stopResponder   func()
	// changed counts the events with a version 1 original whose fee version 2 rounds differently.
	changed int
}

// shadowEvents DLQ messages, one in four with a completed version 1 original in the ledger.
const shadowEvents = 40

func shadowOrder(i int) billing.Order {
	return billing.Order{OrderID: fmt.Sprintf("ord-%d", i), Customer: "cus_1", AmountCents: int64(1000 + 17*i), Currency: "EUR"}
}

// newShadowEnv plans the job with planFlags added to the plan command line.
func newShadowEnv(t *testing.T, planFlags ...string) *shadowEnv {
	t.Helper()
	dbURL, env := newLedgerAndDLQ(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := ledger.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	e := &shadowEnv{
		flags:    "--database-url '" + dbURL + "' --nats-url " + env.Server.ClientURL() + " --actor alice",
		manifest: filepath.Join(t.TempDir(), "job.json"),
		provider: billing.NewProvider(),
	}
	// One completed event outside the DLQ gives the plan its calls per target (2); the originals
	// are recorded after the plan, which keeps out events completed under any version (issue 14).
	receipt, _ := json.Marshal(billing.ReceiptFor(shadowOrder(-1), 1, fixedNow.Add(-time.Hour)))
	if _, err := store.EffectsImport(ctx, []ledger.EffectRow{{Consumer: "billing", EventID: "evt-history", EffectVersion: 1,
		State: "completed", RequestHash: fingerprint.Payload([]byte(`{}`)), RequestHashAlg: fingerprint.Algorithm,
		ResultHash: fingerprint.Payload(receipt), ResultBody: receipt, EffectCount: 2}}); err != nil {
		t.Fatal(err)
	}
	var history []ledger.EffectRow
	for i := range shadowEvents {
		o := shadowOrder(i)
		order, _ := json.Marshal(o)
		if i%4 == 0 {
			// Charged and mailed by version 1 on a live retry: the original the shadow compares with.
			receipt, _ := json.Marshal(billing.ReceiptFor(o, 1, fixedNow.Add(-time.Hour)))
			history = append(history, ledger.EffectRow{Consumer: "billing", EventID: fmt.Sprintf("evt-%02d", i), EffectVersion: 1,
				State: "completed", RequestHash: fingerprint.Payload(order), RequestHashAlg: fingerprint.Algorithm,
				ResultHash: fingerprint.Payload(receipt), ResultBody: receipt, EffectCount: 2})
			if billing.FeeCents(o.AmountCents, 1) != billing.FeeCents(o.AmountCents, 2) {
				e.changed++
			}
		}
		msg := nats.NewMsg("dlq.billing")
		msg.Data = order
		msg.Header.Set("Event-Id", fmt.Sprintf("evt-%02d", i))
		msg.Header.Set("Dlq-Reason", []string{"provider timeout", "http 503"}[i%2])
		msg.Header.Set("Dlq-Original-Subject", "billing.charge.requested")
		if _, err := env.JS.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	if _, stderr, code := runCommand(t, false, "plan "+e.flags+" --consumer billing --stream DLQ --effect-version 2 --reason '"+planReason+"' -o "+e.manifest+" "+strings.Join(planFlags, " ")); code != cmdutil.ExitOK {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	if _, err := store.EffectsImport(ctx, history); err != nil {
		t.Fatal(err)
	}

	c, err := consumer.New(consumer.Config{Name: "billing", Store: store, Conn: env.Conn, Stream: "BILLING",
		DLQSubject: "dlq.billing.charge", Handler: billing.Handler(e.provider, time.Now)})
	if err != nil {
		t.Fatal(err)
	}
	stop, err := c.ServeShadow(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	e.stopResponder = stop
	t.Cleanup(stop)
	return e
}

func TestShadowPassesAndRecordsTheVerdict(t *testing.T) {
	t.Parallel()
	e := newShadowEnv(t)
	stdout, stderr, code := runCommand(t, false, "shadow "+e.flags+" "+e.manifest)
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d:\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"targets\t40", "answered\t40", "no original to compare\t30",
		fmt.Sprintf("changed from the original\t%d", e.changed), fmt.Sprintf("identical to the original\t%d", 10-e.changed),
		"external calls in shadow\t80", "external calls expected by the plan\t80", "feeCents\t", "processedAt\t", "verdict: PASS"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if n := e.provider.Calls(""); n != 0 {
		t.Errorf("the provider received %d calls during shadow, want 0", n)
	}
	reportPath := strings.TrimSuffix(e.manifest, ".json") + ".shadow.json"
	data, err := os.ReadFile(reportPath)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	var report shadow.Report
	if err := json.Unmarshal(data, &report); err != nil || !report.Verdict.Pass || report.Totals.Targets != 40 {
		t.Fatalf("report %s: %v, %+v", reportPath, err, report.Totals)
	}
	if info, err := os.Stat(reportPath); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("report mode %v, %v; want 0600 (it holds result values)", info.Mode().Perm(), err)
	}
	if strings.Contains(stdout, `"feeCents"`) || strings.Contains(stdout, "ord-") {
		t.Errorf("the table shows result values; they belong in the report file only:\n%s", stdout)
	}
}

func TestShadowJSONAndFailingVerdict(t *testing.T) {
	t.Parallel()
	e := newShadowEnv(t)
	if e.changed == 0 {
		t.Fatal("the seed has no event whose fee the fix changes")
	}
	stdout, stderr, code := runCommand(t, false, "shadow --json "+e.flags+" --max-changed-ratio 0 "+e.manifest)
	if code != cmdutil.ExitGuardStopped {
		t.Fatalf("exit %d, want 4:\n%s\n%s", code, stdout, stderr)
	}
	var report shadow.Report
	if err := json.Unmarshal([]byte(stdout), &report); err != nil {
		t.Fatalf("stdout is not one JSON report: %v\n%s", err, stdout)
	}
	if report.Verdict.Pass || len(report.Verdict.Reasons) != 1 || !strings.Contains(report.Verdict.Reasons[0], "--max-changed-ratio") {
		t.Fatalf("verdict %+v", report.Verdict)
	}
	if !strings.Contains(stderr, "shadow verdict for job "+report.JobID+": fail") {
		t.Errorf("stderr %q", stderr)
	}
}

func TestShadowWithoutResponderFailsQuickly(t *testing.T) {
	t.Parallel()
	e := newShadowEnv(t)
	e.stopResponder()
	start := time.Now()
	stdout, stderr, code := runCommand(t, false, "shadow "+e.flags+" --timeout 2s "+e.manifest)
	if code != cmdutil.ExitGuardStopped || !strings.Contains(stdout, "no shadow responder") {
		t.Fatalf("exit %d, want 4 naming the missing responder:\n%s\n%s", code, stdout, stderr)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("shadow without a responder took %v", elapsed)
	}
}

func TestShadowRefusesAJobNotRecorded(t *testing.T) {
	t.Parallel()
	e := newShadowEnv(t)
	// A sound manifest whose job this ledger never recorded.
	other := writeManifest(t, testManifest(t))
	stdout, stderr, code := runCommand(t, false, "shadow "+e.flags+" "+other)
	if code != cmdutil.ExitGateRefused {
		t.Fatalf("exit %d, want 3:\n%s\n%s", code, stdout, stderr)
	}
}

func TestShadowNeedsMigratedSchema(t *testing.T) {
	t.Parallel()
	env := natstest.Start(t, true)
	path := writeManifest(t, testManifest(t))
	_, stderr, code := runCommand(t, false, "shadow --database-url '"+pgtest.URL(t)+"' --nats-url "+env.Server.ClientURL()+" "+path)
	if code == cmdutil.ExitOK || !strings.Contains(stderr, "run `replayctl migrate`") {
		t.Fatalf("exit %d, stderr %q; want a refusal that says to migrate", code, stderr)
	}
}

func TestShadowShowsProgressOnlyOnATerminal(t *testing.T) {
	t.Parallel()
	e := newShadowEnv(t)
	stdout, stderr, code := runCommand(t, true, "shadow "+e.flags+" "+e.manifest)
	if code != cmdutil.ExitOK || !strings.Contains(stderr, "shadowing targets") || !strings.Contains(stderr, "recording the verdict") {
		t.Fatalf("TTY: exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "│") {
		t.Errorf("TTY: tables are not boxed:\n%s", stdout)
	}
	_, stderr, code = runCommand(t, false, "shadow "+e.flags+" "+e.manifest)
	if code != cmdutil.ExitOK || strings.Contains(stderr, "shadowing targets") {
		t.Fatalf("no TTY: exit %d, stderr %q; want no progress", code, stderr)
	}
}

func TestShadowOfAWriteForbiddenJobSaysExecuteWillSuppressTheCalls(t *testing.T) {
	t.Parallel()
	e := newShadowEnv(t, "--write-forbidden")
	stdout, stderr, code := runCommand(t, false, "shadow "+e.flags+" "+e.manifest)
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "write-forbidden: execute will suppress every external call counted below") ||
		!strings.Contains(stdout, "external calls in shadow\t80") {
		t.Fatalf("exit %d:\n%s\n%s", code, stdout, stderr)
	}
	if n := e.provider.Calls(""); n != 0 {
		t.Errorf("the provider received %d calls, want 0", n)
	}
}

// The HTML page shows the same totals as the JSON report of the same run.
func TestShadowReportHTMLMatchesTheJSONReport(t *testing.T) {
	t.Parallel()
	e := newShadowEnv(t)
	htmlPath := filepath.Join(t.TempDir(), "report.html")
	stdout, stderr, code := runCommand(t, false, "shadow --json "+e.flags+" --report-html "+htmlPath+" "+e.manifest)
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d:\n%s\n%s", code, stdout, stderr)
	}
	var report shadow.Report
	if err := json.Unmarshal([]byte(stdout), &report); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	for name, v := range map[string]int64{"targets": report.Totals.Targets, "sampled": int64(len(report.Sample.Items)),
		"matched": report.Totals.Identical, "changed": report.Totals.Changed, "failed": report.Totals.Failed,
		"calls": report.Totals.ShadowExternalCalls} {
		if want := fmt.Sprintf(`data-total="%s">%d<`, name, v); !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if report.Totals.Changed == 0 || !strings.Contains(page, "<code>feeCents</code>") || !strings.Contains(page, `<tr class="noise"><td><code>processedAt</code>`) {
		t.Errorf("page lacks the changed feeCents diff or the greyed processedAt noise row:\n%s", page)
	}
	if info, err := os.Stat(htmlPath); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("page mode %v, %v; want 0600", info.Mode().Perm(), err)
	}
}
