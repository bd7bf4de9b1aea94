package keyscmd

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/keys"
	"github.com/replayctl/replayctl/ledger"
)

// KeysPolicyOptions are the inputs of replayctl keys policy.
type KeysPolicyOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	JSON   bool

	Route    string
	Consumer string
}

// NewCmdKeysPolicy returns the keys policy command. runF, when not nil, replaces the run
// function (tests).
func NewCmdKeysPolicy(f *cmdutil.Factory, runF func(*KeysPolicyOptions) error) *cobra.Command {
	opts := &KeysPolicyOptions{IO: f.IOStreams, Ledger: f.Ledger}
	cmd := &cobra.Command{
		Use:   "policy [--route R | --consumer C]",
		Short: "Show every route's and consumer's registered replay and evidence windows",
		Long: `Show the retention policies services registered in the ledger when they started: for each API
route (registered by the idempotency middleware) and each consumer (registered by the SDK), the
replay window (how long a retry gets the first answer; the stored body goes at its end), the
evidence window (how long the record proves what happened; a tombstone after it), and the
delays the route declared them from: the longest client retry, the longest offline resend,
and the longest inquiry or dispute delay.

Retention is a contract recorded in the ledger, not a constant in code: change the delays in
the service, and its next start registers the new policy with its date.`,
		Example: `  replayctl keys policy
  replayctl keys policy --route "POST /v1/charges" --json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if opts.Route != "" && opts.Consumer != "" {
				return cmdutil.UsageErrorf("--route and --consumer name one policy each: pass one")
			}
			if runF != nil {
				return runF(opts)
			}
			return keysPolicyRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Route, "route", "", `one route's policy, e.g. "POST /v1/charges"`)
	cmd.Flags().StringVar(&opts.Consumer, "consumer", "", "one consumer's policy")
	return cmd
}

func keysPolicyRun(ctx context.Context, opts *KeysPolicyOptions) error {
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	kind, name := apikey.PolicyKind(""), ""
	switch {
	case opts.Route != "":
		kind, name = apikey.PolicyRoute, opts.Route
	case opts.Consumer != "":
		kind, name = apikey.PolicyConsumer, opts.Consumer
	}
	policies, err := keys.Policies(ctx, store, kind, name)
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "KeyPolicies", struct {
			Policies []keys.PolicyView `json:"policies"`
		}{policies})
	}
	if len(policies) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "no retention policy registered yet: services register theirs when they start (idempotency.New, consumer.New)")
		return nil
	}
	t := cmdutil.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY())
	t.Header("KIND", "NAME", "REPLAY", "EVIDENCE", "CLIENT RETRY", "OFFLINE RESEND", "INQUIRY", "EXPIRED KEY", "REGISTERED")
	for _, p := range policies {
		expired := "-"
		if p.Kind == apikey.PolicyRoute {
			expired = "look up"
			if p.ExpiredIsNew {
				expired = "new request"
			} else if !p.Irreversible {
				expired = "look up (reversible)"
			}
		}
		if err := t.Append(string(p.Kind), p.Name, secondsSpan(p.ReplayWindowSeconds), secondsSpan(p.EvidenceWindowSeconds),
			secondsSpan(p.ClientRetrySeconds), secondsSpan(p.OfflineResendSeconds), secondsSpan(p.InquirySeconds), expired,
			p.RegisteredBy+" "+p.RegisteredAt.Format(time.DateOnly)); err != nil {
			return err
		}
	}
	return t.Render()
}

// secondsSpan writes whole seconds the way duration flags read them; "-" for none.
func secondsSpan(s int64) string {
	if s <= 0 {
		return "-"
	}
	if s%86400 != 0 && s > 2*86400 {
		return strconv.FormatInt(s/3600, 10) + "h"
	}
	return cmdutil.SpanString(time.Duration(s) * time.Second)
}
