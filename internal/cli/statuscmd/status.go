// Package statuscmd is `replayctl status`: where a job stands, once or --watch.
package statuscmd

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/cli/shared"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

// StatusOptions are the inputs of replayctl status.
type StatusOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	// JetStream reads the durable's counts; status goes on without them when NATS is down.
	JetStream func(ctx context.Context) (jetstream.JetStream, func(), error)
	JSON      bool
	// JobID is the argument: a job ID, or the path of its manifest file.
	JobID string
	// Watch (--watch) reports again every Interval (--interval) until the job is final.
	Watch    bool
	Interval time.Duration
}

// NewCmdStatus returns the status command. runF, when not nil, replaces the run function (tests).
func NewCmdStatus(f *cmdutil.Factory, runF func(*StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{IO: f.IOStreams, Ledger: f.Ledger, JetStream: f.JetStream}
	cmd := &cobra.Command{
		Use:   "status <job-id | job.json>",
		Short: "Show where a job's targets stand, from any terminal",
		Long: `Show a job's status and counts from the ledger: targets, skipped (drifted since plan),
published, completed, failed, uncertain, in progress, remaining, external calls against the
budget, and, while an executor runs, its rate, ETA and why it is paused or throttled. Uncertain
and failed targets are listed (the first 20 of each). Each consumer instance's share (the lease
owners of the job's ledger rows: completed, in progress, lapsed, uncertain, and the age of its
oldest lease) shows which instance is slow or stuck; the durable's pending, ack-pending and
redelivered counts come from JetStream (--nats-url), and are left out with a note when NATS
cannot be reached.

It reads only; run it as often as you like while execute runs elsewhere.

--watch reports again every --interval until the job is completed, cancelled or failed, or
Ctrl-C (exit 0): on a terminal it redraws the view; otherwise (nohup, CI logs) it prints one
line per interval: counts, rate, ETA (none while paused), the guards, each instance's share and
the durable's pending. With --json it prints one JSON report per line.`,
		Example: `  replayctl status job-20261202-0300-3f9c
  replayctl status job-20261202-0300-3f9c --json | jq .counts
  replayctl status job-20261202-0300-3f9c --watch --interval 5s`,
		Args: cmdutil.JobOrManifestArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.JobID = args[0]
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(opts)
			}
			if opts.Watch {
				if opts.Interval < minWatchInterval {
					return cmdutil.UsageErrorf("--interval %s: must be at least %s", opts.Interval, minWatchInterval)
				}
				return watchRun(cmd.Context(), opts)
			}
			return statusRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Watch, "watch", "w", false, "report again every --interval until the job is final (Ctrl-C stops)")
	cmd.Flags().Var(cmdutil.NewDurationValue(&opts.Interval, executor.DefaultWatchInterval), "interval", "time between two reports of --watch")
	return cmd
}

func statusRun(ctx context.Context, opts *StatusOptions) error {
	store, jobID, err := cmdutil.LedgerAndJob(ctx, opts.JobID, opts.Ledger)
	if err != nil {
		return err
	}
	r, err := executor.StatusOf(ctx, store, executor.StatusOptions{JobID: jobID, JetStream: opts.JetStream})
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "Status", r)
	}
	return printStatus(opts.IO, r)
}

func printStatus(ios *iostreams.IOStreams, r *executor.StatusReport) error {
	out := ios.Out
	fmt.Fprintf(out, "job %s of consumer %s: %s", clip.Line(r.JobID), clip.Line(r.Consumer), clip.Line(string(r.Status)))
	if r.StatusBy != "" {
		fmt.Fprintf(out, " by %s", clip.Line(r.StatusBy))
	}
	if r.StatusAt != nil {
		fmt.Fprintf(out, " at %s", r.StatusAt.Format(time.RFC3339))
	}
	fmt.Fprintln(out)
	if r.StatusReason != "" {
		fmt.Fprintf(out, "  because: %s\n", clip.Line(r.StatusReason))
	}
	fmt.Fprintf(out, "%s job, effect version %d -> %d, write-forbidden %t, manifest %s\n", r.Source.Kind, r.EffectVersion.From, r.EffectVersion.To, r.WriteForbidden, clip.Line(r.ManifestDigest))
	fmt.Fprintf(out, "reason: %s\n", clip.Line(r.Reason))
	if a := r.Approvals; a != nil {
		fmt.Fprintf(out, "approvals: %s\n", clip.Line(shared.ApprovalsText(a)))
	}
	if r.Pace.Rate != nil || r.Pace.MaxInFlight != nil {
		fmt.Fprintf(out, "pace: --rate %s, --max-in-flight %s (change it with `replayctl pace %s`)\n",
			cmdutil.PaceRate(r.Pace.Rate), cmdutil.PaceInFlight(r.Pace.MaxInFlight), clip.Line(r.JobID))
	}
	switch {
	case r.ExecutorAttached && r.Executor != nil:
		fmt.Fprintf(out, "executor: %s (%s), %s", clip.Line(r.Executor.Owner), clip.Line(r.Executor.Actor), clip.Line(r.Counts.State))
		if shownRate(r) > 0 {
			fmt.Fprintf(out, ", %.1f targets/s, ETA %s", shownRate(r), etaText(r.Counts.ETA))
		}
		fmt.Fprintln(out)
		if r.Counts.Reason != "" {
			fmt.Fprintf(out, "  %s\n", clip.Line(r.Counts.Reason))
		}
	case r.ExecutorAttached:
		fmt.Fprintln(out, "executor: attached, no progress reported yet")
	case r.Status == jobtype.Executing || r.Status == jobtype.Paused:
		fmt.Fprint(out, "executor: none attached")
		if r.Executor != nil {
			fmt.Fprintf(out, " (last: %s, %s at %s)", clip.Line(r.Executor.Owner), clip.Line(r.Executor.State), r.Executor.At.Format(time.RFC3339))
		}
		fmt.Fprintf(out, "; run `replayctl execute %s` to continue publishing\n", clip.Line(r.JobID))
	}
	fmt.Fprintln(out)
	p := r.Counts
	if err := shared.PrintProgressTable(ios, [][2]string{
		{"targets", cmdutil.Count(p.Targets)},
		{"skipped (drifted since plan)", cmdutil.Count(p.Skipped)},
		{"published", cmdutil.Count(p.Published)},
		{"completed", cmdutil.Count(p.Completed)},
		{"failed", cmdutil.Count(p.Failed)},
		{"  of which not published (DLQ message gone or changed)", cmdutil.Count(p.SourceFailed)},
		{"uncertain", cmdutil.Count(p.Uncertain)},
		{"in progress", cmdutil.Count(p.InProgress)},
		{"  of which retrying after a transient failure", cmdutil.Count(p.Retrying)},
		{"remaining", cmdutil.Count(p.Remaining)},
		{"external calls", cmdutil.Count(p.ExternalCalls)},
		{"expected external calls", cmdutil.Count(r.ExpectedCalls)},
		{"external call budget", budgetText(r.Budget)},
	}); err != nil {
		return err
	}
	if err := printFleet(ios, r); err != nil {
		return err
	}
	if err := shared.PrintReview(ios, "uncertain: review by hand, never retried automatically", r.Uncertain, p.Uncertain); err != nil {
		return err
	}
	if err := shared.PrintReview(ios, "failed", r.Failed, p.Failed-p.SourceFailed); err != nil {
		return err
	}
	return shared.PrintNotPublished(ios, r.NotPublished, p.SourceFailed)
}

// budgetText is the call budget's row: the figure and where it came from.
func budgetText(b *executor.CallBudget) string {
	if b == nil {
		return "none yet (no passing shadow verdict)"
	}
	return fmt.Sprintf("%d (%s)", b.Budget, b.Describe())
}
