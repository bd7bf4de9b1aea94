// Package policycmd is `replayctl policy set | show`: how many second operators a consumer's
// replays need before execute runs them.
package policycmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
	"github.com/replayctl/replayctl/sshsig"
)

// PolicyOptions are the inputs of replayctl policy set and show.
type PolicyOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	JSON   bool

	Policy approval.Policy
	// WhenCallsOver and ValidFor are the flags as typed; -1 and "" when not given.
	WhenCallsOver int64
	ValidFor      string
	// NewConsumer sets a policy for a consumer the ledger has not heard of yet.
	NewConsumer bool
	// AllowedSignersPath and SignKey are --allowed-signers and --sign-key as typed.
	AllowedSignersPath, SignKey string
	Now                         func() time.Time
}

// NewCmdPolicy returns the policy command with its set and show verbs.
func NewCmdPolicy(f *cmdutil.Factory, runF func(*PolicyOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy <command>",
		Short: "Require approvals from a second operator before a consumer's replays run",
	}
	cmd.AddCommand(newCmdSet(f, runF), newCmdShow(f, runF))
	return cmd
}

func newCmdSet(f *cmdutil.Factory, runF func(*PolicyOptions) error) *cobra.Command {
	opts := &PolicyOptions{IO: f.IOStreams, Ledger: f.Ledger, Now: f.Now}
	cmd := &cobra.Command{
		Use:   "set --consumer C --approvals N [--unless-write-forbidden] [--when-calls-over K] [--valid-for 24h]",
		Short: "Set how many approvals a consumer's jobs need before execute runs them",
		Long: `Store the consumer's approval policy in the ledger, replacing any. Execute then refuses (exit 3) a
job of the consumer until N operators other than its planner approved its manifest digest and its
latest shadow verdict (replayctl approve). --approvals 0 removes the requirement.
--unless-write-forbidden waives it for write-forbidden jobs, --when-calls-over K for jobs that
expect at most K external calls; --valid-for sets how long an approval counts (default 24h).

Approvers proven by key: --allowed-signers FILE names the consumer's approvers in OpenSSH's
allowed_signers format (principal, key type, key, one a line; the file git's SSH signing uses).
Execute then counts only approvals signed (approve --sign-key) by a listed key, under the
principal it is listed as, other than the key that signed the plan; without it, approvals are
counted by name, and status and execute say names are not verified. --require-signed-plan also
refuses a job whose manifest is not signed by its planner (plan --sign-key).

A change that lowers the policy (fewer approvals, a waiver, a higher threshold, longer validity,
a signer removed, signed plans no longer required) needs --sign-key with a key the current
allowed signers list with namespaces="replayctl-policy" (a policy admin); exit 3 otherwise. Every
change is in the audit log with its signature. Without allowed signers a lowering goes through
and is recorded as unverified.`,
		Example: `  replayctl policy set --consumer billing --approvals 1 --when-calls-over 100 --unless-write-forbidden

  # approvers by key, from the team's SSH keys; policy admins sign lowerings
  replayctl policy set --consumer billing --approvals 1 --allowed-signers team.allowed_signers --require-signed-plan
  replayctl policy set --consumer billing --approvals 0 --allowed-signers team.allowed_signers --sign-key ~/.ssh/id_ed25519`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			opts.Policy.SetBy = f.Actor()
			if runF != nil {
				return runF(opts)
			}
			return setRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Policy.Consumer, "consumer", "", "consumer the policy is for (required)")
	fl.IntVar(&opts.Policy.Approvals, "approvals", 0, "approvals a job needs from operators other than its planner (0-10; required)")
	fl.BoolVar(&opts.Policy.UnlessWriteForbidden, "unless-write-forbidden", false, "no approval needed for a write-forbidden job")
	fl.Int64Var(&opts.WhenCallsOver, "when-calls-over", -1, "ask for approvals only when a job expects more external calls than this")
	fl.StringVar(&opts.ValidFor, "valid-for", "24h", "how long an approval counts")
	fl.StringVar(&opts.AllowedSignersPath, "allowed-signers", "", "the consumer's approvers by SSH key, in OpenSSH allowed_signers format: only approvals they sign count")
	fl.BoolVar(&opts.Policy.RequireSignedPlan, "require-signed-plan", false, "refuse a job whose planner did not sign its manifest (plan --sign-key); needs --allowed-signers")
	fl.StringVar(&opts.SignKey, "sign-key", "", "sign the change with this SSH key (a policy admin's, to lower a policy)")
	fl.BoolVar(&opts.NewConsumer, "new-consumer", false, "the consumer has no history in the ledger yet (else a name the ledger does not know is refused as a typo)")
	_ = cmd.MarkFlagRequired("consumer")
	_ = cmd.MarkFlagRequired("approvals")
	return cmd
}

func setRun(ctx context.Context, opts *PolicyOptions) error {
	p := opts.Policy
	if err := protocol.ValidateConsumerName(p.Consumer); err != nil {
		return cmdutil.UsageErrorf("--consumer: %v", err)
	}
	if p.Approvals < 0 || p.Approvals > 10 {
		return cmdutil.UsageErrorf("--approvals %d: give 0 (no approval needed) to 10", p.Approvals)
	}
	if opts.WhenCallsOver >= 0 {
		k := opts.WhenCallsOver
		p.WhenCallsOver = &k
	}
	validFor, err := cmdutil.ParseSpan("valid-for", opts.ValidFor)
	if err != nil {
		return err
	}
	if validFor <= 0 {
		return cmdutil.UsageErrorf("--valid-for %s: must be positive, e.g. 24h", opts.ValidFor)
	}
	p.ValidForSeconds = validFor.Seconds()
	var signer ssh.Signer
	if opts.SignKey != "" {
		if signer, err = sshsig.LoadSigner(opts.SignKey); err != nil {
			return cmdutil.UsageErrorf("--sign-key: %v", err)
		}
	}
	if opts.AllowedSignersPath != "" {
		data, err := os.ReadFile(opts.AllowedSignersPath)
		if err != nil {
			return cmdutil.UsageErrorf("--allowed-signers: %v", err)
		}
		if _, err := sshsig.ParseAllowedSigners(data); err != nil {
			return cmdutil.UsageErrorf("--allowed-signers %s: %v", opts.AllowedSignersPath, err)
		}
		p.AllowedSigners = string(data)
	} else if p.RequireSignedPlan {
		return cmdutil.UsageErrorf("--require-signed-plan needs --allowed-signers: a signature proves nothing without the keys it is checked against")
	}
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	// A policy under a misspelt name guards nothing: plan would refuse the name, so does this.
	if !opts.NewConsumer {
		if err := store.CheckConsumer(ctx, p.Consumer); err != nil {
			if errors.Is(err, ledger.ErrUnknownConsumer) {
				return fmt.Errorf("%w; pass --new-consumer for a consumer that has not run yet", err)
			}
			return err
		}
	}
	res, err := job.PolicySet(ctx, store, job.SetPolicy{Policy: p, Signer: signer, Now: opts.Now()})
	if err != nil {
		return err
	}
	saved := res.Policy
	if res.Unverified {
		cmdutil.PrintWarning(opts.IO, fmt.Sprintf("this change lowers consumer %s's policy (%s) and nothing proves who made it: the policy had no allowed signers; it is recorded in the audit log as unverified",
			p.Consumer, strings.Join(res.Lowered, "; ")))
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "ApprovalPolicies", struct {
			Policies []approval.Policy `json:"policies"`
		}{[]approval.Policy{saved}})
	}
	fmt.Fprintf(opts.IO.Out, "consumer %s: %s\n", saved.Consumer, policyText(&saved))
	if res.SignerKey != "" {
		fmt.Fprintf(opts.IO.Out, "signed by key %s%s\n", res.SignerKey, principalText(res.Principal))
	}
	return nil
}

func newCmdShow(f *cmdutil.Factory, runF func(*PolicyOptions) error) *cobra.Command {
	opts := &PolicyOptions{IO: f.IOStreams, Ledger: f.Ledger}
	cmd := &cobra.Command{
		Use:     "show [--consumer C]",
		Short:   "Show the approval policies stored in the ledger",
		Example: `  replayctl policy show --consumer billing`,
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(opts)
			}
			return showRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Policy.Consumer, "consumer", "", "only this consumer's policy")
	return cmd
}

func showRun(ctx context.Context, opts *PolicyOptions) error {
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	ps, err := store.ApprovalPoliciesList(ctx, opts.Policy.Consumer)
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "ApprovalPolicies", struct {
			Policies []approval.Policy `json:"policies"`
		}{append([]approval.Policy{}, ps...)})
	}
	if len(ps) == 0 {
		fmt.Fprintln(opts.IO.Out, "no approval policy: execute runs a shadowed job without approvals")
		return nil
	}
	t := cmdutil.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY())
	t.Header([]string{"CONSUMER", "POLICY", "SET BY", "SET AT"})
	for _, p := range ps {
		if err := t.Append([]string{p.Consumer, policyText(&p), p.SetBy, p.SetAt.UTC().Format(time.RFC3339)}); err != nil {
			return err
		}
	}
	return t.Render()
}

// policyText says what a policy asks, in one phrase.
func policyText(p *approval.Policy) string {
	if p.Approvals == 0 {
		return "no approval needed"
	}
	s := strconv.Itoa(p.Approvals) + " approval(s) from operators other than the planner"
	if p.WhenCallsOver != nil {
		s += fmt.Sprintf(", when a job expects over %d external calls", *p.WhenCallsOver)
	}
	if p.UnlessWriteForbidden {
		s += ", except write-forbidden jobs"
	}
	s += ", each valid for " + cmdutil.SpanString(p.ValidFor())
	if signers, err := p.Signers(); err == nil && signers != nil {
		s += fmt.Sprintf(", signed by one of %d allowed signers", len(signers))
		if p.RequireSignedPlan {
			s += ", of a signed plan"
		}
	} else {
		s += " (names not verified: no allowed signers)"
	}
	return s
}

func principalText(p string) string {
	if p == "" {
		return ""
	}
	return " (policy admin " + p + ")"
}
