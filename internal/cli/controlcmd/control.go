// Package controlcmd is `replayctl pause`, `resume` and `cancel`.
package controlcmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger"
)

// ControlOptions are the inputs of replayctl pause, resume and cancel.
type ControlOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	Now    func() time.Time
	JSON   bool
	// Action is pause, resume or cancel.
	Action  string
	Request job.Control
}

type controlVerb struct {
	short, long, example string
	run                  func(context.Context, job.Controller, job.Control) (*job.ControlResult, error)
}

var controlVerbs = map[string]controlVerb{
	"pause": {
		short: "Stop a job's publishing until it is resumed",
		long: `Pause an executing job: its executor stops publishing within a second and waits. Messages
already published (at most --max-in-flight) are still processed by the consumer. Resume with
"replayctl resume JOB". Recorded in the audit log with --reason.`,
		example: `  replayctl pause job-20261202-0300-3f9c --reason "payments-api error rate rising"`,
		run:     job.Pause,
	},
	"resume": {
		short: "Let a paused job publish again",
		long: `Resume a paused job (paused by an operator or by a guard). An attached executor continues within
a second; if none is attached (it stopped on a guard, or was killed), run
"replayctl execute JOB" again to continue publishing.`,
		example: `  replayctl resume job-20261202-0300-3f9c`,
		run:     job.Resume,
	},
	"cancel": {
		short: "End a job for good; nothing already replayed is reverted",
		long: `Cancel a job that has not completed. Publishing stops within a second, the consumer SDK stops
accepting the job's messages (within its 5 s cache), and every target keeps the outcome it
reached. Cancel never reverts what was already replayed: external effects already made stay
made. A cancelled job cannot be resumed; plan a new job for what is left.`,
		example: `  replayctl cancel job-20261202-0300-3f9c --reason "wrong failure filter, re-planning"`,
		run:     job.Cancel,
	},
}

// NewCmdControl returns the pause, resume or cancel command. runF, when not nil, replaces the run
// function (tests).
func NewCmdControl(f *cmdutil.Factory, action string, runF func(*ControlOptions) error) *cobra.Command {
	verb := controlVerbs[action]
	opts := &ControlOptions{IO: f.IOStreams, Ledger: f.Ledger, Now: f.Now, Action: action}
	cmd := &cobra.Command{
		Use:     action + " <job-id | job.json>",
		Short:   verb.short,
		Long:    verb.long,
		Example: verb.example,
		Args:    cmdutil.JobOrManifestArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Request.JobID = args[0]
			opts.Request.Actor = f.Actor()
			opts.Request.Now = opts.Now
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(opts)
			}
			return controlRun(cmd.Context(), opts, verb)
		},
	}
	cmd.Flags().StringVar(&opts.Request.Reason, "reason", "", "why, recorded in the audit log and shown by status")
	return cmd
}

func controlRun(ctx context.Context, opts *ControlOptions, verb controlVerb) error {
	req := opts.Request
	store, jobID, err := cmdutil.LedgerAndJob(ctx, req.JobID, opts.Ledger)
	if err != nil {
		return err
	}
	req.JobID = jobID
	r, err := verb.run(ctx, store, req)
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "JobControl", r)
	}
	out := opts.IO.Out
	fmt.Fprintf(out, "job %s: %s -> %s\n", r.JobID, r.From, r.To)
	c := r.Counts
	fmt.Fprintf(out, "targets %d: completed %d, failed %d, uncertain %d, skipped %d, remaining %d\n",
		c.Targets, c.Completed, c.Failed, c.Uncertain, c.Skipped, c.Remaining)
	switch {
	case r.Action == "cancel":
		fmt.Fprintln(out, "cancel never reverts: what was replayed before it stays replayed")
	case r.Action == "resume" && !r.ExecutorAttached:
		fmt.Fprintf(out, "no executor is attached: run `replayctl execute %s` to continue publishing\n", r.JobID)
	case r.ExecutorAttached:
		fmt.Fprintln(out, "the attached executor takes this within a second")
	}
	return nil
}
