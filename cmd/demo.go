package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

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

// errDemoMismatch means the plan or the shadow disagreed with the seeded truth: a replayctl bug.
var errDemoMismatch = errors.New("the plan or the shadow does not match the seeded truth")

// NewCmdDemo returns the demo command. runF, when not nil, replaces the run function (tests).
func NewCmdDemo(f *Factory, runF func(*DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{IO: f.IOStreams, DatabaseURL: f.DatabaseURL, Now: f.Now}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a replay end to end on an embedded NATS server and the local PostgreSQL",
		Long: `Start an in-process NATS server with JetStream, recreate the PostgreSQL schema replayctl_demo
(in the database of --database-url; nothing outside that schema is touched), seed a realistic DLQ
for a billing consumer, and run plan on it:

  - thousands of failed charges under four failure reasons
  - some already completed by a later live retry (replaying them repeats their effects)
  - uncertain rows, lapsed and live leases, a payload that changed under the same event ID, an
    event ID whose payload disagrees with the ledger, repeats, and messages without a usable ID

The demo then proves the plan against the seeded truth, field by field, shows that the manifest
validates, and that a hand-edited copy is refused.

Then it serves the example billing consumer's shadow responder (examples/billing, whose effect
version 2 fixes a fee-rounding bug of version 1) and runs shadow on the job: every target through
the responder, the 100-event sample diffed and the verdict recorded. It proves that the fake payment
provider received no call, and that the changed fees and the noise field are the ones seeded.`,
		Example: `  go run . demo
  replayctl demo --events 20000 --dir ./demo-out`,
		Args: noArgs,
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
		return usageErrorf("--events %d: the demo needs at least 200 events", opts.Events)
	}
	if !ledger.ValidSchemaName(opts.Schema) {
		return usageErrorf("--schema %q: use lowercase letters, digits and _ (at most 63), starting with a letter", opts.Schema)
	}
	step := 0
	narrate := func(format string, args ...any) {
		step++
		fmt.Fprintf(opts.IO.ErrOut, "%d. %s\n", step, fmt.Sprintf(format, args...))
	}
	progress, stage, finishProgress := stepProgress(opts.IO, "scanning DLQ")
	shadowProgress, _, finishShadowProgress := stepProgress(opts.IO, "shadowing targets")
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
			stage(description)
		},
		ShadowProgress: func(done, total int64) {
			finishProgress()
			shadowProgress(done, total)
		},
	})
	finishProgress()
	finishShadowProgress()
	if err != nil {
		return err
	}
	if opts.JSON {
		return printDemoJSON(opts.IO, report)
	}
	if err := printPlanResult(opts.IO, false, report.ManifestPath, report.Plan); err != nil {
		return err
	}
	out := opts.IO.Out
	if len(report.Mismatches) > 0 {
		return fmt.Errorf("%w:\n  %s", errDemoMismatch, strings.Join(report.Mismatches, "\n  "))
	}
	fmt.Fprintf(out, "\nproof: every figure of the plan matches the seeded truth (%d targets, %d expected external calls)\n",
		report.Truth.Targets, report.Truth.ExpectedExternalCalls)
	fmt.Fprintf(out, "proof: %s validates; a copy with writeForbidden switched by hand is refused: %v\n",
		report.ManifestPath, tamperVerdict(report.TamperedRefusal))
	fmt.Fprintln(out)
	if err := printShadowReport(opts.IO, report.ShadowReportPath, report.Shadow); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nproof: the shadow pass made %d external calls (the billing provider counted them) and found the %d changed fees the seed holds\n",
		report.ProviderCallsDuringShadow, report.Truth.ShadowChanged)
	fmt.Fprintf(out, "\nthe job, its targets and the audit entry are in PostgreSQL schema %s; look around with:\n", report.Schema)
	fmt.Fprintf(out, "  replayctl show %s\n", report.ManifestPath)
	if scoped, err := ledger.WithSearchPath(opts.DatabaseURL(), report.Schema); err == nil {
		fmt.Fprintf(out, "  replayctl validate --ledger %s --database-url '%s'\n", report.ManifestPath, ledger.RedactURL(scoped))
	}
	return nil
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

func printDemoJSON(io *iostreams.IOStreams, r *demo.Report) error {
	mismatches := r.Mismatches
	if mismatches == nil {
		mismatches = []string{}
	}
	err := printJSON(io.Out, struct {
		JobID         string         `json:"jobId"`
		Manifest      string         `json:"manifest"`
		Schema        string         `json:"schema"`
		Stats         manifest.Stats `json:"stats"`
		ExpectedCalls int64          `json:"expectedExternalCalls"`
		MatchesTruth  bool           `json:"matchesTruth"`
		Mismatches    []string       `json:"mismatches"`
		TamperRefused bool           `json:"tamperedCopyRefused"`
		ShadowReport  string         `json:"shadowReport"`
		ShadowTotals  shadow.Totals  `json:"shadowTotals"`
		ShadowVerdict shadow.Verdict `json:"shadowVerdict"`
		ProviderCalls int64          `json:"providerCallsDuringShadow"`
	}{r.Plan.Manifest.ID, r.ManifestPath, r.Schema, r.Plan.Manifest.Stats, r.Plan.Manifest.ExpectedExternalCalls,
		len(r.Mismatches) == 0, mismatches, r.TamperedRefusal != nil,
		r.ShadowReportPath, r.Shadow.Totals, r.Shadow.Verdict, r.ProviderCallsDuringShadow})
	if err != nil {
		return err
	}
	if len(r.Mismatches) > 0 {
		return &ExitError{Code: ExitFailure, Err: errDemoMismatch, Reported: true}
	}
	return nil
}
