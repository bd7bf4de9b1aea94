// Package shadowcmd is `replayctl shadow`: the verdict of a job's shadow run, its diff report and
// --json.
package shadowcmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cli/shared"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/seal"
	"github.com/replayctl/replayctl/shadow"
	"github.com/replayctl/replayctl/shadow/htmlreport"
)

// ShadowOptions are the inputs of replayctl shadow.
type ShadowOptions struct {
	IO        *iostreams.IOStreams
	Ledger    func(ctx context.Context) (*ledger.Store, error)
	JetStream func(ctx context.Context) (jetstream.JetStream, func(), error)
	Now       func() time.Time
	JSON      bool

	// ManifestPath is the argument: the manifest file, or a job ID.
	ManifestPath string
	// ReportPath is --report; empty means next to the manifest (job.json -> job.shadow.json), or
	// JOB.shadow.json in the current directory for a job ID.
	ReportPath string
	// KeyringFile is --keyring: opens the original result bodies the consumer sealed.
	KeyringFile string
	// HTMLReportPath is --report-html: also write the report as one self-contained HTML page.
	HTMLReportPath string
	Request        shadow.Options
}

// NewCmdShadow returns the shadow command. runF, when not nil, replaces the run function (tests).
func NewCmdShadow(f *cmdutil.Factory, runF func(*ShadowOptions) error) *cobra.Command {
	opts := &ShadowOptions{IO: f.IOStreams, Ledger: f.Ledger, JetStream: f.JetStream, Now: f.Now}
	req := &opts.Request
	defaults := shadow.DefaultThresholds()
	cmd := &cobra.Command{
		Use:   "shadow <job-id | job.json>",
		Short: "Run every target through the consumer's shadow responder and judge the diff",
		Long: `Send every target of a planned job to the consumer's shadow responder (request/reply on
replay.shadow.<consumer>) under the new effect version. A shadow handler makes no external write and
no ledger write: its external calls are recorded, not made.

Steps:
  1. verify the manifest and its recorded job (same digest, not executed)
  2. pick a deterministic sample (--sample, seeded by the manifest digest, spread over the failure
     reasons) and shadow it twice: result fields that differ between the two runs are noise
     (timestamps, generated IDs) and are reported as such, not as changes
  3. diff each sampled result against its original: the ledger's result body where it is still
     retained, else its hash only (said so), else a shadow run under the old effect version; a
     different number of external calls counts as a change too
  4. shadow every target (--concurrency requests in flight, --timeout each) and store each outcome
  5. judge: identical / changed / no original, terminal business failures (a class of their own:
     execute counts them as failed, so --max-failure-ratio, 0 by default, bounds them whether or
     not the original failed too), shadow errors, unanswered requests, and the shadow's external
     calls against the manifest's expected external calls

The verdict is recorded with the manifest digest; execute requires a passing one. A report with
every sampled diff (field values included; the table shows paths only) is written next to the
manifest unless --report says where.

Exits 0 on a passing verdict, 4 on a failing one, 3 when the manifest is not the recorded job or the
job already ran, 2 on bad input. Shadowing again replaces the stored outcomes and adds a verdict.`,
		Example: `  replayctl shadow job.json
  replayctl shadow job.json --report-html job.shadow.html
  replayctl shadow job.json --concurrency 32 --timeout 10s --ignore-field processedAt
  # CI: the report as JSON on stdout, exit 4 when the verdict fails
  replayctl shadow job.json --json --max-changed-ratio 0.5`,
		Args: cmdutil.JobOrManifestArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ManifestPath = args[0]
			opts.JSON = f.JSON()
			req.Actor = f.Actor()
			if runF != nil {
				return runF(opts)
			}
			return shadowRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&req.Concurrency, "concurrency", 16, "shadow requests in flight at once (1-1024)")
	fl.IntVar(&req.Sample, "sample", 100, "events in the diffed sample")
	fl.Var(cmdutil.NewDurationValue(&req.Timeout, 5*time.Second), "timeout", "how long to wait for each shadow reply")
	fl.StringArrayVar(&req.IgnoreFields, "ignore-field", nil, "result field to leave out of the comparison, e.g. processedAt or lines[*].sku (repeatable)")
	fl.StringVar(&opts.KeyringFile, "keyring", os.Getenv("REPLAYCTL_KEYRING_FILE"), "keyring file to open the original result bodies the consumer sealed (consumer.Config.ResultKeyring); without it they are compared on their hashes (default: $REPLAYCTL_KEYRING_FILE)")
	fl.StringVar(&opts.ReportPath, "report", "", "where to write the report (default: next to the manifest, <name>.shadow.json)")
	fl.StringVar(&opts.HTMLReportPath, "report-html", "", "also write the report as one self-contained HTML page (side-by-side diffs, changed-field histogram) to this file")
	fl.Float64Var(&req.Thresholds.MaxErrorRatio, "max-error-ratio", defaults.MaxErrorRatio, "fail when more than this fraction of targets fail in shadow or are missing from the DLQ (0: none may)")
	fl.Float64Var(&req.Thresholds.MaxUnansweredRatio, "max-unanswered-ratio", defaults.MaxUnansweredRatio, "fail when more than this fraction of requests time out or find no responder (0: none may)")
	fl.Float64Var(&req.Thresholds.MaxFailureRatio, "max-failure-ratio", defaults.MaxFailureRatio, "fail when more than this fraction of targets end in a terminal business failure, which execute counts as failed (0: none may)")
	fl.Float64Var(&req.Thresholds.MaxChangedRatio, "max-changed-ratio", defaults.MaxChangedRatio, "fail when more than this fraction of the targets with an original changed result (1: never)")
	fl.Float64Var(&req.Thresholds.MaxCallsOverExpected, "max-calls-over", defaults.MaxCallsOverExpected, "fail when the shadow's external calls exceed the manifest's expected calls by more than this fraction")
	return cmd
}

func shadowRun(ctx context.Context, opts *ShadowOptions) error {
	req := opts.Request
	req.Now = opts.Now
	// The domain package reads zero as "the default"; on the command line a typed 0 is a mistake.
	switch {
	case req.Concurrency < 1:
		return cmdutil.UsageErrorf("--concurrency %d: must be between 1 and 1024", req.Concurrency)
	case req.Sample < 1:
		return cmdutil.UsageErrorf("--sample %d: must be at least 1", req.Sample)
	case req.Timeout <= 0:
		return cmdutil.UsageErrorf("--timeout %s: must be positive, e.g. 5s", req.Timeout)
	}
	if opts.KeyringFile != "" {
		kr, err := seal.ReadKeyringFile(opts.KeyringFile)
		if err != nil {
			return cmdutil.UsageErrorf("--keyring: %v", err)
		}
		req.Keyring = kr
	}
	jm, err := cmdutil.LoadJobManifest(ctx, opts.ManifestPath, opts.Ledger)
	if err != nil {
		return err
	}
	req.Manifest = jm.Manifest
	if err := req.Normalise(); err != nil {
		return err
	}
	req.ReportPath = opts.ReportPath
	if req.ReportPath == "" {
		req.ReportPath = defaultReportPath(jm.Ref())
	}
	var finishProgress func()
	req.Progress, req.Stage, finishProgress = cmdutil.StepProgress(opts.IO, "shadowing targets", "targets")
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	js, closeNATS, err := opts.JetStream(ctx)
	if err != nil {
		return err
	}
	defer closeNATS()
	report, err := shadow.Run(ctx, js.Conn(), js, store, req)
	finishProgress()
	if err != nil {
		return err
	}
	if err := shadow.WriteReport(req.ReportPath, report); err != nil {
		return fmt.Errorf("the verdict is recorded, but the report could not be written: %w", err)
	}
	if opts.HTMLReportPath != "" {
		if err := htmlreport.WriteFile(opts.HTMLReportPath, report); err != nil {
			return fmt.Errorf("the verdict is recorded, but the HTML report could not be written: %w", err)
		}
	}
	if opts.JSON {
		if err := cmdutil.PrintJSON(opts.IO.Out, "ShadowReport", report); err != nil {
			return err
		}
	} else if err := shared.PrintShadowReport(opts.IO, req.ReportPath, opts.HTMLReportPath, report); err != nil {
		return err
	}
	if !report.Verdict.Pass {
		return &cmdutil.ExitError{Code: cmdutil.ExitGuardStopped, Reported: opts.JSON, Err: fmt.Errorf(
			"shadow verdict for job %s: fail: %s", report.JobID, strings.Join(report.Verdict.Reasons, "; "))}
	}
	return nil
}

// defaultReportPath puts the report beside the manifest: job.json -> job.shadow.json.
func defaultReportPath(manifestPath string) string {
	return strings.TrimSuffix(manifestPath, filepath.Ext(manifestPath)) + ".shadow.json"
}
