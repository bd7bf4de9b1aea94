// Package approvecmd is `replayctl approve` and `replayctl reject`: a second operator's decision on
// a shadowed job, bound to its manifest digest and shadow verdict.
package approvecmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/internal/cli/statuscmd"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger"
)

// ApproveOptions are the inputs of replayctl approve and reject.
type ApproveOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	Now    func() time.Time
	JSON   bool

	Request job.Decide
}

// NewCmdApprove returns the approve command, or with decision approval.Rejected the reject
// command. runF, when not nil, replaces the run function (tests).
func NewCmdApprove(f *cmdutil.Factory, decision approval.Decision, runF func(*ApproveOptions) error) *cobra.Command {
	opts := &ApproveOptions{IO: f.IOStreams, Ledger: f.Ledger, Now: f.Now}
	verb, short, long := "approve", "Approve a shadowed job's replay: the second pair of eyes its policy asks for",
		`Approve a shadowed job on behalf of another operator than the one who planned it. The approval is
bound to the job's manifest digest and its latest passing shadow verdict: a re-plan or a new
verdict voids it, and it expires (24 h unless the consumer's policy says otherwise). While a job
has fewer approvals than its consumer's policy asks (replayctl policy show), execute refuses it
with exit 3 and says who may approve what. Recorded in the audit log; status and log show it.`
	if decision == approval.Rejected {
		verb, short, long = "reject", "Reject a shadowed job's replay: execute refuses it while the rejection stands",
			`Reject a shadowed job: execute refuses it (exit 3) while the rejection stands, whatever the
approvals. Like an approval it is bound to the manifest digest and the shadow verdict, and
expires; the same operator approving it later replaces the rejection.`
	}
	cmd := &cobra.Command{
		Use:     verb + " <job-id | job.json> --note TEXT",
		Short:   short,
		Long:    long,
		Example: fmt.Sprintf("  replayctl %s job-20261202-0300-3f9c --note \"checked the 12 largest charges against the provider\"", verb),
		Args:    cmdutil.JobOrManifestArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Request.JobID, opts.Request.Actor, opts.Request.Decision, opts.Request.Now = args[0], f.Actor(), decision, opts.Now
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(opts)
			}
			return approveRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Request.Note, "note", "", "what you checked, or what must change (required, recorded)")
	_ = cmd.MarkFlagRequired("note")
	return cmd
}

func approveRun(ctx context.Context, opts *ApproveOptions) error {
	store, jobID, err := cmdutil.LedgerAndJob(ctx, opts.Request.JobID, opts.Ledger)
	if err != nil {
		return err
	}
	req := opts.Request
	req.JobID = jobID
	r, err := job.Record(ctx, store, req)
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "Approval", r)
	}
	d := r.Decision
	fmt.Fprintf(opts.IO.Out, "job %s %s by %s (manifest %s, shadow verdict #%d), valid until %s\n",
		d.JobID, d.Decision, clip.Line(d.Actor), d.ManifestDigest, d.VerdictID, d.ExpiresAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(opts.IO.Out, "approvals: %s\n", clip.Line(statuscmd.ApprovalsText(&r.State)))
	switch {
	case len(r.State.Rejections) > 0:
		fmt.Fprintln(opts.IO.Out, "execute refuses the job while a rejection stands")
	case r.State.Satisfied:
		fmt.Fprintf(opts.IO.Out, "the job has the approvals it needs: `replayctl execute %s` may run it\n", d.JobID)
	default:
		fmt.Fprintf(opts.IO.Out, "%d more approval(s) needed before execute runs it\n", r.State.Required-len(r.State.Approvals))
	}
	return nil
}
