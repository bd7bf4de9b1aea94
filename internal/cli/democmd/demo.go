// Package democmd is `replayctl demo`: the whole job, end to end, on an embedded NATS server and
// the local PostgreSQL.
package democmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/cli/shared"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/demo"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/shadow"
)

// DemoOptions are the inputs of replayctl demo.
type DemoOptions struct {
	IO          *iostreams.IOStreams
	DatabaseURL func() string
	Now         func() time.Time
	Actor       string
	JSON        bool
	Events      int
	Schema      string
	Dir         string
}

// errDemoMismatch means the plan, the shadow or the execute disagreed with the seeded truth: a
// replayctl bug.
var errDemoMismatch = errors.New("the plan, the shadow or the execute does not match the seeded truth")

// NewCmdDemo returns the demo command. runF, when not nil, replaces the run function (tests).
func NewCmdDemo(f *cmdutil.Factory, runF func(*DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{IO: f.IOStreams, DatabaseURL: f.DatabaseURL, Now: f.Now}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a replay end to end on an embedded NATS server and the local PostgreSQL",
		Long: `Start an in-process NATS server with JetStream, recreate the PostgreSQL schema replayctl_demo
(in the database of --database-url; nothing outside that schema is touched; a second demo on the
same schema waits for the first to finish instead of dropping it under it), seed a realistic DLQ
for a billing consumer, and run plan, shadow and execute on it:

  - thousands of failed charges under four failure reasons
  - some already completed by a later live retry (replaying them repeats their effects)
  - uncertain rows, lapsed and live leases, a payload that changed under the same event ID, an
    event ID whose payload disagrees with the ledger, repeats, and messages without a usable ID

The demo then proves the plan against the seeded truth, field by field, shows that the manifest
validates, and that a hand-edited copy is refused.

Then it serves the example billing consumer's shadow responder (internal/billing, whose effect
version 2 fixes a fee-rounding bug of version 1) and runs shadow on the job: every target through
the responder, the 100-event sample diffed and the verdict recorded. It proves that the fake payment
provider received no call, and that the changed fees and the noise field are the ones seeded.

Last it executes the job for real. It creates the billing consumer's stream BILLING (billing.>,
where the DLQ messages' original subject billing.charge.requested lands) and runs the billing
consumer on it, 8 messages at a time, with a payment provider of its own. A dry run passes every
gate and publishes nothing; then execute, with the default guards and no rate limit, publishes
every target and reads each outcome from the ledger. The demo proves that every target completed,
that the provider charged each target's order exactly once (a charge and a receipt: two calls per
target) and no excluded event's order or any other, and that executing the completed job again is
refused by the job-status gate with nothing published.

At the default --events 5000 the run takes about 15 seconds on an idle 2-core machine, most of
it the execute, which goes at the billing consumer's pace (five ledger round trips per target);
the timings of each phase are printed at the end.`,
		Example: `  go run . demo
  replayctl demo --events 20000 --dir ./demo-out`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			opts.Actor = f.Actor()
			if runF != nil {
				return runF(opts)
			}
			return demoRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.Events, "events", 5000, "distinct event IDs to seed in the DLQ (at least 200)")
	cmd.Flags().StringVar(&opts.Schema, "schema", demo.DefaultSchema, "PostgreSQL schema the demo recreates")
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "directory for the manifest (default: a new temporary directory)")
	return cmd
}

func demoRun(ctx context.Context, opts *DemoOptions) error {
	if opts.Events < 200 {
		return cmdutil.UsageErrorf("--events %d: the demo needs at least 200 events", opts.Events)
	}
	if !ledger.ValidSchemaName(opts.Schema) {
		return cmdutil.UsageErrorf("--schema %q: use lowercase letters, digits and _ (at most 63), starting with a letter", opts.Schema)
	}
	progress, stage, finishProgress := cmdutil.StepProgress(opts.IO, "scanning DLQ", "messages")
	shadowProgress, _, finishShadowProgress := cmdutil.StepProgress(opts.IO, "shadowing targets", "targets")
	executeBar := shared.NewExecuteProgress(opts.IO)
	finishBars := func() {
		finishProgress()
		finishShadowProgress()
		executeBar.Finish()
	}
	step := 0
	narrate := func(format string, args ...any) {
		finishBars()
		step++
		fmt.Fprintf(opts.IO.ErrOut, "%d. %s\n", step, fmt.Sprintf(format, args...))
	}
	report, err := demo.Run(ctx, demo.Options{
		DatabaseURL: opts.DatabaseURL(),
		Schema:      opts.Schema,
		Events:      opts.Events,
		Dir:         opts.Dir,
		Actor:       opts.Actor,
		Now:         opts.Now(),
		Step:        narrate,
		Progress:    progress,
		Stage: func(description string) {
			finishShadowProgress()
			executeBar.Finish()
			stage(description)
		},
		ShadowProgress: func(done, total int64) {
			finishProgress()
			shadowProgress(done, total)
		},
		ExecuteProgress: func(p executor.Progress) {
			finishProgress()
			finishShadowProgress()
			executeBar.Update(p)
		},
	})
	finishBars()
	if err != nil {
		return err
	}
	if opts.JSON {
		return printDemoJSON(opts.IO, report)
	}
	if err := shared.PrintPlanResult(opts.IO, false, report.ManifestPath, report.Plan); err != nil {
		return err
	}
	out := opts.IO.Out
	fmt.Fprintln(out)
	if proven(out, "plan", report.PlanMismatches) {
		fmt.Fprintf(out, "proof: every figure of the plan matches the seeded truth (%d targets, %d expected external calls)\n",
			report.Truth.Targets, report.Truth.ExpectedExternalCalls)
	}
	fmt.Fprintf(out, "proof: %s validates; a copy with writeForbidden switched by hand is refused: %v\n",
		report.ManifestPath, tamperVerdict(report.TamperedRefusal))
	fmt.Fprintln(out)
	if err := shared.PrintShadowReport(opts.IO, report.ShadowReportPath, "", report.Shadow); err != nil {
		return err
	}
	fmt.Fprintln(out)
	if proven(out, "shadow", report.ShadowMismatches) {
		fmt.Fprintf(out, "proof: the shadow pass made %d external calls (the billing provider counted them); none of its %d targets had completed before, so none had an original to compare\n",
			report.ProviderCallsDuringShadow, report.Truth.Targets)
	}
	fmt.Fprintln(out)
	if err := printDemoExecution(opts.IO, report); err != nil {
		return err
	}
	if b := report.Backfill; proven(out, "backfill", report.BackfillMismatches) {
		fmt.Fprintf(out, "\nproof: backfill %s (write-forbidden) of the %d orders version 1 completed, from their originals on %s, "+
			"shadowed against the ledger's version 1 results: %d changed (the fee fix, and the receipts version 1 never mailed), processedAt as noise, %d provider calls; report %s\n",
			b.Plan.Manifest.ID, b.Plan.Manifest.Stats.Targets, b.Plan.Manifest.Source.Stream, b.Shadow.Totals.Changed, b.ProviderCalls, b.ShadowReportPath)
	}
	printDemoAPI(out, report)
	t := report.Timings
	fmt.Fprintf(out, "\ntimings: seed %s, plan %s, shadow %s, execute %s (%.0f targets/s); %s in all\n",
		seconds(t.Seed), seconds(t.Plan), seconds(t.Shadow), seconds(t.Execute), report.Execution.TargetsPerSecond(), seconds(t.Total))
	fmt.Fprintf(out, "\nthe job, its targets, the replay's ledger rows and the audit log are in PostgreSQL schema %s; look around with:\n", report.Schema)
	fmt.Fprintf(out, "  replayctl show %s\n", report.ManifestPath)
	if scoped, err := ledger.WithSearchPath(opts.DatabaseURL(), report.Schema); err == nil {
		url := ledger.RedactURL(scoped)
		fmt.Fprintf(out, "  replayctl validate --ledger %s --database-url '%s'\n", report.ManifestPath, url)
		fmt.Fprintf(out, "  replayctl status %s --database-url '%s'\n", report.Plan.Manifest.ID, url)
		fmt.Fprintf(out, "  replayctl keys stats --database-url '%s'\n", url)
	}
	if len(report.Mismatches) > 0 {
		return fmt.Errorf("%w:\n  %s", errDemoMismatch, strings.Join(report.Mismatches, "\n  "))
	}
	return nil
}

// proven says whether a phase matched the seeded truth, and says so when it did not.
func proven(out io.Writer, phase string, mismatches []string) bool {
	if len(mismatches) == 0 {
		return true
	}
	fmt.Fprintf(out, "PROOF FAILED: the %s differs from the seeded truth in %d figures (listed at the end)\n", phase, len(mismatches))
	return false
}

// printDemoExecution shows the execute phase: the dry run, the run's figures, what the payment
// provider saw, and the refused second run.
func printDemoExecution(ios *iostreams.IOStreams, r *demo.Report) error {
	out, x := ios.Out, r.Execution
	fmt.Fprintf(out, "dry run of job %s: every gate passed; it would publish %d targets (first: %s); nothing was published\n",
		x.DryRun.Preflight.JobID, x.DryRun.Preflight.ToPublish, firstTarget(x.DryRun.Preflight))
	fmt.Fprintf(out, "billing consumer on stream %s (durable %s), with a payment provider of its own\n\n", x.Stream, x.Durable)
	if err := shared.PrintExecuteResult(ios, x.Result); err != nil {
		return err
	}
	if x.Err != nil {
		fmt.Fprintf(out, "the run returned: %v\n", x.Err)
	}
	fmt.Fprintln(out)
	if err := shared.PrintProgressTable(ios, [][2]string{
		{"targets of the plan", cmdutil.Count(r.Truth.Targets)},
		{"messages on stream " + x.Stream, cmdutil.Count(int64(x.StreamAfterRun))},
		{"orders charged exactly once", cmdutil.Count(x.ChargedOnce)},
		{"orders charged more than once", cmdutil.Count(x.Duplicates)},
		{"targets never charged", cmdutil.Count(x.NotCharged)},
		{"excluded events charged", cmdutil.Count(int64(len(x.ExcludedCharged)))},
		{"other orders charged", cmdutil.Count(x.Strays)},
		{"provider calls (charges + receipts)", fmt.Sprintf("%d (%d + %d)", x.ProviderCalls, x.Charges, x.Receipts)},
	}); err != nil {
		return err
	}
	fmt.Fprintln(out)
	if proven(out, "execute", r.ExecuteMismatches) {
		fmt.Fprintf(out, "proof: the dry run published nothing (%d messages on %s, %d provider calls) and would have published the %d targets\n",
			x.StreamAfterDryRun, x.Stream, x.ProviderCallsAfterDryRun, r.Truth.Targets)
		fmt.Fprintf(out, "proof: execute completed all %d targets; the provider charged each target's order exactly once and nothing else: %d calls, 2 per target\n",
			x.Result.Final.Completed, x.ProviderCalls)
	}
	fmt.Fprintf(out, "proof: executing job %s again is refused with nothing published: %v\n", x.Result.Preflight.JobID, refusalVerdict(x.SecondRefusal))
	return nil
}

func firstTarget(p executor.Preflight) string {
	if len(p.FirstTargets) == 0 {
		return "none"
	}
	t := p.FirstTargets[0]
	return fmt.Sprintf("%s to %s as %s", t.EventID, t.Subject, t.MsgID)
}

func refusalVerdict(err error) string {
	if err == nil {
		return "NO — it was not refused, this is a bug"
	}
	return err.Error()
}

// seconds renders d for the timings line.
func seconds(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}

func tamperVerdict(err error) string {
	switch {
	case errors.Is(err, manifest.ErrTampered):
		return "yes (digest mismatch)"
	case err != nil:
		return "yes (" + err.Error() + ")"
	default:
		return "NO — this is a bug"
	}
}

// demoExecutionJSON is the execute phase in --json.
type demoExecutionJSON struct {
	DryRun           *executor.Result `json:"dryRun"`
	Result           *executor.Result `json:"result"`
	Error            string           `json:"error,omitempty"`
	Durable          executor.Durable `json:"durable"`
	TargetsPerSecond float64          `json:"targetsPerSecond"`
	StreamMessages   struct {
		AfterDryRun uint64 `json:"afterDryRun"`
		AfterRun    uint64 `json:"afterRun"`
		AfterSecond uint64 `json:"afterSecondRun"`
	} `json:"streamMessages"`
	ProviderCalls struct {
		AfterDryRun int64 `json:"afterDryRun"`
		AfterRun    int64 `json:"afterRun"`
		AfterSecond int64 `json:"afterSecondRun"`
		Charges     int64 `json:"charges"`
		Receipts    int64 `json:"receipts"`
	} `json:"providerCalls"`
	ChargedOnce          int64    `json:"ordersChargedOnce"`
	NotCharged           int64    `json:"targetsNeverCharged"`
	Duplicates           int64    `json:"ordersChargedMoreThanOnce"`
	DuplicateExamples    []string `json:"duplicateExamples"`
	ExcludedCharged      []string `json:"excludedEventsCharged"`
	Strays               int64    `json:"otherOrdersCharged"`
	SecondRefused        bool     `json:"secondExecuteRefused"`
	SecondGate           string   `json:"secondExecuteGate"`
	SecondRefusalMessage string   `json:"secondExecuteRefusal"`
}

func demoExecution(x *demo.Execution) demoExecutionJSON {
	j := demoExecutionJSON{DryRun: x.DryRun, Result: x.Result, Durable: executor.Durable{Stream: x.Stream, Name: x.Durable},
		TargetsPerSecond: x.TargetsPerSecond(), ChargedOnce: x.ChargedOnce, NotCharged: x.NotCharged,
		Duplicates: x.Duplicates, DuplicateExamples: nonNil(x.DuplicateExamples), ExcludedCharged: nonNil(x.ExcludedCharged),
		Strays: x.Strays, SecondRefused: x.SecondRefusal != nil, SecondGate: x.SecondGate()}
	if x.Err != nil {
		j.Error = x.Err.Error()
	}
	if x.SecondRefusal != nil {
		j.SecondRefusalMessage = x.SecondRefusal.Error()
	}
	j.StreamMessages.AfterDryRun, j.StreamMessages.AfterRun, j.StreamMessages.AfterSecond = x.StreamAfterDryRun, x.StreamAfterRun, x.StreamAfterSecond
	p := &j.ProviderCalls
	p.AfterDryRun, p.AfterRun, p.AfterSecond, p.Charges, p.Receipts = x.ProviderCallsAfterDryRun, x.ProviderCalls, x.ProviderCallsAfterSecond, x.Charges, x.Receipts
	return j
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func printDemoJSON(ios *iostreams.IOStreams, r *demo.Report) error {
	t := r.Timings
	err := cmdutil.PrintJSON(ios.Out, "Demo", struct {
		JobID         string             `json:"jobId"`
		Manifest      string             `json:"manifestPath"`
		Schema        string             `json:"schema"`
		Stats         manifest.Stats     `json:"stats"`
		ExpectedCalls int64              `json:"expectedExternalCalls"`
		MatchesTruth  bool               `json:"matchesTruth"`
		Mismatches    []string           `json:"mismatches"`
		TamperRefused bool               `json:"tamperedCopyRefused"`
		ShadowReport  string             `json:"shadowReport"`
		ShadowTotals  shadow.Totals      `json:"shadowTotals"`
		ShadowVerdict shadow.Verdict     `json:"verdict"`
		ProviderCalls int64              `json:"providerCallsDuringShadow"`
		Execute       demoExecutionJSON  `json:"execute"`
		Backfill      *demo.Backfill     `json:"backfill"`
		API           []demoAPIStepJSON  `json:"api"`
		Timings       map[string]float64 `json:"timingsSeconds"`
	}{r.Plan.Manifest.ID, r.ManifestPath, r.Schema, r.Plan.Manifest.Stats, r.Plan.Manifest.ExpectedExternalCalls,
		len(r.Mismatches) == 0, nonNil(r.Mismatches), r.TamperedRefusal != nil,
		r.ShadowReportPath, r.Shadow.Totals, r.Shadow.Verdict, r.ProviderCallsDuringShadow,
		demoExecution(r.Execution), r.Backfill, demoAPISteps(r.API),
		map[string]float64{"seed": t.Seed.Seconds(), "plan": t.Plan.Seconds(), "shadow": t.Shadow.Seconds(),
			"execute": t.Execute.Seconds(), "total": t.Total.Seconds()}})
	if err != nil {
		return err
	}
	if len(r.Mismatches) > 0 {
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: errDemoMismatch, Reported: true}
	}
	return nil
}

// demoAPIStepJSON is one request of the demo's API phase.
type demoAPIStepJSON struct {
	Name          string `json:"name"`
	Status        int    `json:"status"`
	Replayed      bool   `json:"replayed"`
	Problem       string `json:"problem,omitempty"`
	ProviderCalls int64  `json:"providerCalls"`
}

func demoAPISteps(a *demo.API) []demoAPIStepJSON {
	out := []demoAPIStepJSON{}
	if a == nil {
		return out
	}
	for _, s := range a.Steps {
		out = append(out, demoAPIStepJSON{Name: s.Name, Status: s.Status, Replayed: s.Replayed == "true", Problem: s.Problem, ProviderCalls: s.ProviderCalls})
	}
	return out
}

// printDemoAPI shows the API phase: each request's answer and the provider's charges after it.
func printDemoAPI(out io.Writer, r *demo.Report) {
	a := r.API
	if a == nil {
		return
	}
	fmt.Fprintf(out, "\nAPI idempotency: POST %s with Idempotency-Key (route policy: replay window %s, evidence window %s)\n",
		a.URL, cmdutil.SpanString(a.Policy.ReplayWindow), cmdutil.SpanString(a.Policy.EvidenceWindow))
	for _, s := range a.Steps {
		answer := fmt.Sprintf("%d", s.Status)
		switch {
		case s.Replayed == "true":
			answer += " replayed"
		case s.Problem != "":
			answer += " " + s.Problem
		}
		fmt.Fprintf(out, "  %-44s %-24s provider charges %d\n", s.Name, answer, s.ProviderCalls)
	}
	if proven(out, "API", r.APIMismatches) {
		fmt.Fprintln(out, "proof: one charge per key; a retry got the stored response, a changed body 422, a duplicate in flight 409, a revoked token 403, an expired key a look-up (410, never a second charge)")
	}
}
