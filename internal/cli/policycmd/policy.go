// Package policycmd is `replayctl policy set | show`: how many second operators a consumer's
// replays need before execute runs them.
package policycmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
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
	opts := &PolicyOptions{IO: f.IOStreams, Ledger: f.Ledger}
	cmd := &cobra.Command{
		Use:   "set --consumer C --approvals N [--unless-write-forbidden] [--when-calls-over K] [--valid-for 24h]",
		Short: "Set how many approvals a consumer's jobs need before execute runs them",
		Long: `Store the consumer's approval policy in the ledger, replacing any. Execute then refuses (exit 3) a
job of the consumer until N operators other than its planner approved its manifest digest and its
latest shadow verdict (replayctl approve). --approvals 0 removes the requirement.
--unless-write-forbidden waives it for write-forbidden jobs, --when-calls-over K for jobs that
expect at most K external calls; --valid-for sets how long an approval counts (default 24h).`,
		Example: `  replayctl policy set --consumer billing --approvals 1 --when-calls-over 100 --unless-write-forbidden`,
		Args:    cmdutil.NoArgs,
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
	saved, err := store.ApprovalPoliciesSet(ctx, p, ledger.AuditEntry{Actor: p.SetBy, Action: "policy.set", Details: map[string]any{
		"consumer": p.Consumer, "approvals": p.Approvals, "unlessWriteForbidden": p.UnlessWriteForbidden,
		"whenCallsOver": p.WhenCallsOver, "validForSeconds": p.ValidForSeconds}})
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "ApprovalPolicies", struct {
			Policies []approval.Policy `json:"policies"`
		}{[]approval.Policy{saved}})
	}
	fmt.Fprintf(opts.IO.Out, "consumer %s: %s\n", saved.Consumer, policyText(&saved))
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
	return s + ", each valid for " + cmdutil.SpanString(p.ValidFor())
}
