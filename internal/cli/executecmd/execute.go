// Package executecmd is `replayctl execute`: the gates, the confirmation, the run with its
// progress, and the result.
package executecmd

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/cli/shared"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

// ExecuteOptions are the inputs of replayctl execute.
type ExecuteOptions struct {
	IO        *iostreams.IOStreams
	Ledger    func(ctx context.Context) (*ledger.Store, error)
	JetStream func(ctx context.Context) (jetstream.JetStream, func(), error)
	Now       func() time.Time
	JSON      bool

	// ManifestPath is the argument: the manifest file, or a job ID.
	ManifestPath string
	Yes          bool
	// Drain deletes the completed targets' DLQ messages once the run completed the job.
	Drain   bool
	Request executor.Options
}

// NewCmdExecute returns the execute command. runF, when not nil, replaces the run function (tests).
func NewCmdExecute(f *cmdutil.Factory, runF func(*ExecuteOptions) error) *cobra.Command {
	opts := &ExecuteOptions{IO: f.IOStreams, Ledger: f.Ledger, JetStream: f.JetStream, Now: f.Now}
	req := &opts.Request
	defaults := executor.DefaultGuards()
	cmd := &cobra.Command{
		Use:   "execute <job-id | job.json>",
		Short: "Replay a shadowed job's targets for real, gated, rate-limited and resumable",
		Long: `Publish every target of a shadowed job to its original subject under the job's new effect
version, so the consumer processes it again with its idempotency ledger as the guard.

Gates, each refusing with exit 3 and what to do about it:
  - one executor per job, and one executing (or paused) job per consumer
  - the manifest is the recorded job (same digest), and the job is shadowed or was interrupted
  - the latest shadow verdict of the job passed, for this manifest digest
  - the job's effect version is still above every version the ledger knows for the consumer
  - the plan is not stale: targets whose ledger rows changed since plan (completed, uncertain,
    in flight, conflicting) are counted; above --max-drift the run is refused, within it they
    are skipped
  - a confirmation on a terminal, or --yes

Each target is published with Event-Id, Replay-Job, Replay-Mode: execute, Replay-Effect-Version,
Replay-Write-Forbidden and Nats-Msg-Id <job>:<event>, at most --rate per second and with at most
--max-in-flight published targets (and durable pending messages) without an outcome. Outcomes are
read from the ledger, never from acks; a target already done under the new version is never
published again. A run starts with a canary (--canary, default 1% of the targets, at least 10, at
most 500): it publishes those, waits until they settle and judges every guard on them, and only
then opens --rate and --max-in-flight; 0 skips it.

Guards stop the run with exit 4 and pause the job: external calls over the budget
(--max-calls-over), failures over --max-error-ratio, more than --max-uncertain uncertain targets,
more than --max-retrying-ratio of the targets in flight retrying after transient failures (what
the consumer calls is down), or no outcome landing in the ledger for --settle-timeout, whether
the run is publishing, throttled or waiting (the job then stays executing).

From another terminal: replayctl status|pause|resume|cancel JOB. Pause and cancel take effect
within a second; messages already published are still processed, and cancel never reverts what
was already replayed. After a crash or Ctrl-C, run the same execute again: it continues where it
stopped, and the ledger keeps any event from producing its external effect twice.

Exits 0 when every target settled, 5 when some are uncertain (listed for manual review), 4 when a
guard stopped the run, 3 when a gate refused, 2 on bad input or when the NATS server does not
permit this user to publish the replays (nothing is delivered; docs/nats/permissions.conf).`,
		Example: `  # CI: every gate, what would be published, nothing published (exit 0 or 3)
  replayctl execute job.json --dry-run

  replayctl execute job.json --rate 200 --max-in-flight 500
  replayctl execute job.json --yes --json > result.json`,
		Args: cmdutil.JobOrManifestArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ManifestPath = args[0]
			opts.JSON = f.JSON()
			req.Actor = f.Actor()
			// Flags left out take the job's stored pace (replayctl pace, or the run before).
			req.RateUnset, req.MaxInFlightUnset = !cmd.Flags().Changed("rate"), !cmd.Flags().Changed("max-in-flight")
			// The domain package reads 0 as "the default canary"; on the command line 0 skips it.
			if cmd.Flags().Changed("canary") {
				if req.Canary < 0 {
					return cmdutil.UsageErrorf("--canary %d: must be 0 (no canary) or a number of targets", req.Canary)
				}
				if req.Canary == 0 {
					req.Canary = executor.NoCanary
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return executeRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.Float64Var(&req.Rate, "rate", 0, "most targets published per second (0: no limit)")
	fl.IntVar(&req.MaxInFlight, "max-in-flight", 1000, "most published targets without an outcome in the ledger, and most pending messages on the durable")
	fl.IntVar(&req.Canary, "canary", 0, "targets published first, let settle and judged by every guard before --rate and --max-in-flight open (default: 1% of the targets, at least 10, at most 500; 0: none)")
	fl.BoolVar(&req.DryRun, "dry-run", false, "run every gate and print what would be published; publish nothing")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation (required without a terminal)")
	fl.BoolVar(&opts.Drain, "drain", false, "once the job completed, delete its completed targets' messages from the DLQ (as replayctl drain does)")
	fl.StringVar(&req.Durable, "durable", "", "durable consumer whose pending count throttles publishing (default: the consumer's name)")
	fl.Float64Var(&req.Guards.MaxCallsOver, "max-calls-over", defaults.MaxCallsOver, "stop when external calls exceed the manifest's expected calls by more than this fraction")
	fl.Float64Var(&req.Guards.MaxErrorRatio, "max-error-ratio", defaults.MaxErrorRatio, "stop when more than this fraction of settled targets failed")
	fl.Int64Var(&req.Guards.MaxUncertain, "max-uncertain", defaults.MaxUncertain, "stop publishing when more than this many targets are uncertain")
	fl.Float64Var(&req.Guards.MaxRetryingRatio, "max-retrying-ratio", defaults.MaxRetryingRatio,
		"stop publishing when more than this fraction of the targets in flight wait to retry after a transient failure (after 10)")
	fl.Float64Var(&req.MaxDriftRatio, "max-drift", 0, "skip targets whose ledger rows changed since plan, up to this fraction; above it refuse (0: refuse any)")
	fl.Var(cmdutil.NewDurationValue(&req.SettleTimeout, 5*time.Minute), "settle-timeout", "stop when published targets make no progress in the ledger for this long")
	return cmd
}

func executeRun(ctx context.Context, opts *ExecuteOptions) error {
	req := opts.Request
	req.Now = opts.Now
	switch {
	case req.MaxInFlight < 1:
		return cmdutil.UsageErrorf("--max-in-flight %d: must be at least 1", req.MaxInFlight)
	case req.SettleTimeout <= 0:
		return cmdutil.UsageErrorf("--settle-timeout %s: must be positive, e.g. 5m", req.SettleTimeout)
	}
	jm, err := cmdutil.LoadJobManifest(ctx, opts.ManifestPath, opts.Ledger)
	if err != nil {
		return err
	}
	req.Manifest = jm.Manifest
	if err := req.Normalise(); err != nil {
		return err
	}
	if !opts.Yes && !req.DryRun {
		req.Confirm = confirmExecute(opts.IO)
	}
	bar := shared.NewExecuteProgress(opts.IO)
	req.Progress = bar.Update
	req.Stage = bar.Stage
	req.Notice = bar.Notice
	req.Warn = func(w string) { cmdutil.PrintWarning(opts.IO, w) }
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	js, closeNATS, err := opts.JetStream(ctx)
	if err != nil {
		return err
	}
	defer closeNATS()
	collectLessOftenForExecute()
	result, err := executor.Execute(ctx, js, store, req)
	bar.Finish()
	if result == nil {
		return err
	}
	if opts.JSON {
		if perr := cmdutil.PrintJSON(opts.IO.Out, "Execute", result); perr != nil {
			return perr
		}
	} else if perr := shared.PrintExecuteResult(opts.IO, result); perr != nil {
		return perr
	}
	if err == nil && opts.Drain && !result.DryRun && result.JobStatus == jobtype.Completed {
		drained, derr := executor.Drain(ctx, js, store, executor.DrainOptions{JobID: result.Preflight.JobID, Actor: req.Actor})
		if derr != nil {
			return &cmdutil.ExitError{Code: cmdutil.ExitCode(derr), Reported: opts.JSON, Err: fmt.Errorf("job %s completed, but its drain failed: %w", result.Preflight.JobID, derr)}
		}
		// Stdout holds the run's one JSON document; the drain's line goes with the logs.
		shared.PrintDrainResult(opts.IO.ErrOut, drained)
	}
	switch {
	case err != nil:
		return &cmdutil.ExitError{Code: cmdutil.ExitCode(err), Reported: opts.JSON, Err: err}
	case !result.DryRun && result.Final.Uncertain > 0:
		return &cmdutil.ExitError{Code: cmdutil.ExitNeedsReview, Reported: opts.JSON, Err: fmt.Errorf(
			"job %s finished, but %d targets are uncertain: review them by hand (listed above, and in `replayctl status %s`)",
			result.Preflight.JobID, result.Final.Uncertain, result.Preflight.JobID)}
	}
	return nil
}

// confirmExecute asks on a terminal for the job ID; without one it declines, so the gate tells
// the operator to pass --yes.
func confirmExecute(ios *iostreams.IOStreams) func(executor.Preflight) (bool, error) {
	return func(p executor.Preflight) (bool, error) {
		if !ios.CanPrompt() {
			return false, nil
		}
		w := ios.ErrOut
		fmt.Fprintf(w, "\nReplay job %s of consumer %s under effect version %d:\n", p.JobID, p.Consumer, p.EffectVersion.To)
		fmt.Fprintf(w, "  targets                 %d\n", p.Targets)
		fmt.Fprintf(w, "  already settled/skipped %d\n", p.Targets-p.Counts.Remaining)
		fmt.Fprintf(w, "  to publish now          %d\n", p.ToPublish)
		fmt.Fprintf(w, "  external call budget    %d: %s\n", p.CallBudget, p.Budget.Describe())
		fmt.Fprintf(w, "  write-forbidden         %t\n", p.WriteForbidden)
		if p.Canary > 0 {
			fmt.Fprintf(w, "  canary                  %d targets first, judged by every guard before the rest\n", p.Canary)
		}
		if p.Drift.Drifted > 0 {
			fmt.Fprintf(w, "  skipped as drifted      %d\n", p.Drift.Drifted)
		}
		return ios.ConfirmTyped("the job ID", p.JobID), nil
	}
}
