// Package draincmd is `replayctl drain`: deleting a finished job's messages from the DLQ.
package draincmd

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/cli/shared"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
)

// DrainOptions are the inputs of replayctl drain.
type DrainOptions struct {
	IO        *iostreams.IOStreams
	Ledger    func(ctx context.Context) (*ledger.Store, error)
	JetStream func(ctx context.Context) (jetstream.JetStream, func(), error)
	JSON      bool
	Yes       bool
	Request   executor.DrainOptions
}

// NewCmdDrain returns the drain command. runF, when not nil, replaces the run function (tests).
func NewCmdDrain(f *cmdutil.Factory, runF func(*DrainOptions) error) *cobra.Command {
	opts := &DrainOptions{IO: f.IOStreams, Ledger: f.Ledger, JetStream: f.JetStream}
	cmd := &cobra.Command{
		Use:   "drain <job-id> --yes",
		Short: "Delete a finished job's completed targets' messages from its DLQ stream",
		Long: `Delete from the job's DLQ stream the messages of every target the job completed, by the stream
sequences recorded at plan time (every copy, when the DLQ held the event more than once), so the
DLQ shows what is left, as SQS redrive moves messages out. Only a completed, cancelled or failed
job is drained (a running one still reads its messages), never a backfill (its stream holds the
originals), and never when the stream was created again since plan. Targets that failed, were
skipped or are uncertain keep their messages. Without a drain nothing is lost: the next plan
still keeps the done events out. Deleting is not undone: --yes is required. Recorded in the audit
log; safe to repeat. "replayctl execute job.json --drain" drains after a completed run.`,
		Example: `  replayctl drain job-20261202-0300-3f9c --yes`,
		Args:    cmdutil.JobArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Request.JobID = args[0]
			opts.Request.Actor = f.Actor()
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(opts)
			}
			return drainRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "delete the messages (required: a drain is not undone)")
	return cmd
}

func drainRun(ctx context.Context, opts *DrainOptions) error {
	if !opts.Yes {
		return cmdutil.UsageErrorf("drain deletes DLQ messages and is not undone: pass --yes to drain job %s", opts.Request.JobID)
	}
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	js, closeNATS, err := opts.JetStream(ctx)
	if err != nil {
		return err
	}
	defer closeNATS()
	res, err := executor.Drain(ctx, js, store, opts.Request)
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "Drain", res)
	}
	shared.PrintDrainResult(opts.IO.Out, res)
	return nil
}
