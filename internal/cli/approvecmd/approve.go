// Package approvecmd is `replayctl approve` and `replayctl reject`: a second operator's decision on
// a shadowed job, bound to its manifest digest and shadow verdict.
package approvecmd

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/internal/cli/shared"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/sshsig"
)

// ApproveOptions are the inputs of replayctl approve and reject.
type ApproveOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	Now    func() time.Time
	JSON   bool

	Request job.Decide
	// SignKey, StatementPath and SignaturePath are the signing flags as typed; PrintStatement
	// prints the statement to sign elsewhere instead of recording.
	SignKey, StatementPath, SignaturePath string
	PrintStatement                        bool
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
with exit 3 and says who may approve what. Recorded in the audit log; status and log show it.

Signed approvals: with --sign-key the decision is an SSH signature (OpenSSH SSHSIG, namespace
replayctl-approval) over a statement of the job, manifest digest, verdict, decision, actor, note,
time and expiry, made with a key file or the same key in ssh-agent. When the consumer's policy
names allowed signers (replayctl policy set --allowed-signers), only signed approvals by a listed
key count, recorded under the principal the key is listed as, and never by the key that signed
the plan. For a hardware key or a machine without the key: --print-statement writes the
statement, sign it there with
  ssh-keygen -Y sign -n replayctl-approval -f KEY statement.txt
and record it with --statement statement.txt --signature statement.txt.sig (within an hour).`
	if decision == approval.Rejected {
		verb, short, long = "reject", "Reject a shadowed job's replay: execute refuses it while the rejection stands",
			`Reject a shadowed job: execute refuses it (exit 3) while the rejection stands, whatever the
approvals. Like an approval it is bound to the manifest digest and the shadow verdict, and
expires; the same operator approving it later replaces the rejection.`
	}
	cmd := &cobra.Command{
		Use:   verb + " <job-id | job.json> --note TEXT",
		Short: short,
		Long:  long,
		Example: fmt.Sprintf(`  replayctl %[1]s job-20261202-0300-3f9c --note "checked the 12 largest charges against the provider"
  replayctl %[1]s job-20261202-0300-3f9c --note "checked" --sign-key ~/.ssh/id_ed25519
  replayctl %[1]s job-20261202-0300-3f9c --note "checked" --print-statement > statement.txt
  replayctl %[1]s job-20261202-0300-3f9c --statement statement.txt --signature statement.txt.sig`, verb),
		Args: cmdutil.JobOrManifestArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Request.JobID, opts.Request.Actor, opts.Request.Decision, opts.Request.Now = args[0], f.Actor(), decision, opts.Now
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(opts)
			}
			return approveRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Request.Note, "note", "", "what you checked, or what must change (required, recorded; with --statement, the statement's)")
	fl.StringVar(&opts.SignKey, "sign-key", "", "sign the decision with this SSH key: a private key file, or a .pub whose key ssh-agent holds")
	fl.BoolVar(&opts.PrintStatement, "print-statement", false, "print the statement to sign elsewhere (ssh-keygen -Y sign -n replayctl-approval) and record nothing")
	fl.StringVar(&opts.StatementPath, "statement", "", "a statement printed by --print-statement and signed elsewhere (with --signature)")
	fl.StringVar(&opts.SignaturePath, "signature", "", "the SSH signature of --statement (ssh-keygen -Y sign's .sig file)")
	return cmd
}

func approveRun(ctx context.Context, opts *ApproveOptions) error {
	req := opts.Request
	if err := signingFlags(opts, &req); err != nil {
		return err
	}
	store, jobID, err := cmdutil.LedgerAndJob(ctx, opts.Request.JobID, opts.Ledger)
	if err != nil {
		return err
	}
	req.JobID = jobID
	if opts.PrintStatement {
		st, err := job.DecisionStatement(ctx, store, req)
		if err != nil {
			return err
		}
		_, err = opts.IO.Out.Write(st)
		return err
	}
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
	if d.SignerKey != "" {
		fmt.Fprintf(opts.IO.Out, "signed by key %s\n", d.SignerKey)
	}
	fmt.Fprintf(opts.IO.Out, "approvals: %s\n", clip.Line(shared.ApprovalsText(&r.State)))
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

// signingFlags checks the signing flags' combinations and reads their files into req.
func signingFlags(opts *ApproveOptions, req *job.Decide) error {
	switch {
	case opts.Request.Note == "" && opts.StatementPath == "":
		return cmdutil.UsageErrorf("--note is required: say what you checked, or what must change")
	case (opts.StatementPath == "") != (opts.SignaturePath == ""):
		return cmdutil.UsageErrorf("--statement and --signature go together: the statement signed elsewhere and its signature")
	case opts.StatementPath != "" && (opts.SignKey != "" || opts.PrintStatement):
		return cmdutil.UsageErrorf("--statement records a decision signed elsewhere: leave out --sign-key and --print-statement")
	case opts.PrintStatement && opts.SignKey != "":
		return cmdutil.UsageErrorf("--print-statement is for signing elsewhere; --sign-key signs here: give one")
	}
	var err error
	if opts.SignKey != "" {
		if req.Signer, err = sshsig.LoadSigner(opts.SignKey); err != nil {
			return cmdutil.UsageErrorf("--sign-key: %v", err)
		}
	}
	if opts.StatementPath != "" {
		if req.Statement, err = os.ReadFile(opts.StatementPath); err != nil {
			return cmdutil.UsageErrorf("--statement: %v", err)
		}
		if req.Signature, err = os.ReadFile(opts.SignaturePath); err != nil {
			return cmdutil.UsageErrorf("--signature: %v", err)
		}
	}
	return nil
}
