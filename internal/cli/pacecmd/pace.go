// Package pacecmd is `replayctl pace`: a job's publish rate and in-flight cap, changed while it
// runs.
package pacecmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
)

// PaceOptions are the inputs of replayctl pace.
type PaceOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	JSON   bool
	// Rate and MaxInFlight are the flags' values; only those given reach Request.
	Rate        float64
	MaxInFlight int
	Request     executor.PaceRequest
}

// NewCmdPace returns the pace command. runF, when not nil, replaces the run function (tests).
func NewCmdPace(f *cmdutil.Factory, runF func(*PaceOptions) error) *cobra.Command {
	opts := &PaceOptions{IO: f.IOStreams, Ledger: f.Ledger}
	cmd := &cobra.Command{
		Use:   "pace <job-id | job.json> [--rate N] [--max-in-flight M] [--reason R]",
		Short: "Change a job's publish rate and in-flight cap, also while it runs",
		Long: `Change the publish rate (--rate, targets per second; 0 for no limit) and the in-flight cap
(--max-in-flight: published targets without an outcome, and the durable's pending messages) of a
job that has not finished. A running execute takes the new values at its next ledger poll
(within a second) and says so; an execute started later uses them unless it names --rate or
--max-in-flight itself. Name one or both; the other keeps its value.

Stored with the job and audited (job.pace, with the values before and after, the actor and
--reason; see "replayctl log JOB"). A completed or cancelled job is refused (exit 3), a bad
value with exit 2.`,
		Example: `  # the provider's latency is rising: slow down without stopping
  replayctl pace job-20261202-0300-3f9c --rate 20 --max-in-flight 50 --reason "payments-api p99 2s"

  # it recovered: no rate limit again, the in-flight cap unchanged
  replayctl pace job-20261202-0300-3f9c --rate 0`,
		Args: cmdutil.JobOrManifestArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Request.JobID = args[0]
			opts.Request.Actor = f.Actor()
			opts.Request.Now = f.Now
			opts.JSON = f.JSON()
			if cmd.Flags().Changed("rate") {
				opts.Request.Rate = &opts.Rate
			}
			if cmd.Flags().Changed("max-in-flight") {
				opts.Request.MaxInFlight = &opts.MaxInFlight
			}
			if opts.Request.Rate == nil && opts.Request.MaxInFlight == nil {
				return cmdutil.UsageErrorf("pace needs --rate, --max-in-flight or both")
			}
			if runF != nil {
				return runF(opts)
			}
			return paceRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.Float64Var(&opts.Rate, "rate", 0, "most targets published per second (0: no limit)")
	fl.IntVar(&opts.MaxInFlight, "max-in-flight", 0, "most published targets without an outcome in the ledger, and most pending messages on the durable")
	fl.StringVar(&opts.Request.Reason, "reason", "", "why, recorded in the audit log")
	return cmd
}

func paceRun(ctx context.Context, opts *PaceOptions) error {
	req := opts.Request
	store, jobID, err := cmdutil.LedgerAndJob(ctx, req.JobID, opts.Ledger)
	if err != nil {
		return err
	}
	req.JobID = jobID
	r, err := executor.Pace(ctx, store, req)
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "Pace", r)
	}
	out := opts.IO.Out
	fmt.Fprintf(out, "job %s (%s): --rate %s -> %s, --max-in-flight %s -> %s\n", r.JobID, r.Status,
		cmdutil.PaceRate(r.From.Rate), cmdutil.PaceRate(r.To.Rate), cmdutil.PaceInFlight(r.From.MaxInFlight), cmdutil.PaceInFlight(r.To.MaxInFlight))
	if r.ExecutorAttached {
		fmt.Fprintln(out, "the attached executor takes it at its next poll, within a second")
	} else {
		fmt.Fprintf(out, "no executor is attached: `replayctl execute %s` starts with it unless it names --rate or --max-in-flight\n", r.JobID)
	}
	return nil
}
