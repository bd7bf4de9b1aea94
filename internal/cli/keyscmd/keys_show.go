package keyscmd

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/keys"
	"github.com/replayctl/replayctl/ledger"
)

// KeysShowOptions are the inputs of replayctl keys show.
type KeysShowOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	JSON   bool

	SecretFile string
	Lookup     keys.Lookup
}

// NewCmdKeysShow returns the keys show command. runF, when not nil, replaces the run function
// (tests).
func NewCmdKeysShow(f *cmdutil.Factory, runF func(*KeysShowOptions) error) *cobra.Command {
	opts := &KeysShowOptions{IO: f.IOStreams, Ledger: f.Ledger}
	cmd := &cobra.Command{
		Use:   "show (--key K | --key-hash H) [--route R]",
		Short: "Show the records of one idempotency key, without their bodies",
		Long: `Show every record of one idempotency key: one per caller (tenant and principal) and route it
was used under. --key is hashed here with the service's secret (--key-secret-file) and never
sent or stored; --key-hash takes the hash from a log line or another command's output.

A record shows its state, its fingerprint and algorithm, the stored response's status and
sealing key (never the body), the provider's reference, the operation ID the service passed
to the provider (what a look-up searches by), and its replay and evidence dates.`,
		Example: `  replayctl keys show --route "POST /v1/charges" --key 0b7a9c2e-5d1f-4c1e-9a57-3c6f0e2d9b11 \
    --key-secret-file /etc/billing/key-secret
  replayctl keys show --key-hash hmac-sha256:86013fbe93c2… --json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			secret, err := readKeySecret(opts.SecretFile, opts.Lookup.RawKey)
			if err != nil {
				return err
			}
			opts.Lookup.Secret = secret
			if runF != nil {
				return runF(opts)
			}
			return keysShowRun(cmd.Context(), opts)
		},
	}
	lookupFlags(cmd, &opts.Lookup)
	keySecretFlag(cmd, &opts.SecretFile)
	return cmd
}

func lookupFlags(cmd *cobra.Command, l *keys.Lookup) {
	fl := cmd.Flags()
	fl.StringVar(&l.Route, "route", "", `the route, e.g. "POST /v1/charges" (default: every route)`)
	fl.StringVar(&l.RawKey, "key", "", "the raw Idempotency-Key a caller sent (hashed here, never stored)")
	fl.StringVar(&l.KeyHash, "key-hash", "", "the key's stored hash (hmac-sha256:…)")
	fl.StringVar(&l.ScopeHash, "scope-hash", "", "one caller's record, when the key was used under several")
}

func keysShowRun(ctx context.Context, opts *KeysShowOptions) error {
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	recs, err := keys.Show(ctx, store, opts.Lookup)
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "KeyRecords", struct {
			Records []keys.RecordView `json:"records"`
		}{recs})
	}
	for i, r := range recs {
		if i > 0 {
			fmt.Fprintln(opts.IO.Out)
		}
		describeKeyRecord(opts.IO.Out, r)
	}
	return nil
}

func describeKeyRecord(w io.Writer, r keys.RecordView) {
	date := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.Format(time.RFC3339)
	}
	state := string(r.State)
	if r.Resolution != "" {
		state += " (" + string(r.Resolution) + ")"
	}
	response := "none"
	if r.ResponseStatus != 0 {
		response = strconv.Itoa(r.ResponseStatus)
		if r.ResponseStored {
			response += ", sealed under key " + r.ResponseKeyID
		} else {
			response += ", body dropped"
		}
	}
	fmt.Fprintf(w, "route          %s\n", r.Route)
	fmt.Fprintf(w, "state          %s\n", state)
	fmt.Fprintf(w, "key            %s\n", r.KeyHash)
	fmt.Fprintf(w, "scope          %s (client %s)\n", r.ScopeHash, apikey.ShortHash(r.ClientHash))
	fmt.Fprintf(w, "fingerprint    %s (%s)\n", r.RequestHash, r.RequestHashAlg)
	fmt.Fprintf(w, "response       %s\n", response)
	fmt.Fprintf(w, "external ref   %s\n", cmdutil.Dash(r.ExternalRef))
	fmt.Fprintf(w, "operation ID   %s\n", r.OperationID)
	fmt.Fprintf(w, "calls started  %d (attempts %d, lease live %t)\n", r.CallsStarted, r.Attempts, r.LeaseLive)
	fmt.Fprintf(w, "first seen     %s, changed %s\n", r.CreatedAt.Format(time.RFC3339), r.UpdatedAt.Format(time.RFC3339))
	fmt.Fprintf(w, "replay until   %s\n", date(r.ReplayUntil))
	fmt.Fprintf(w, "evidence until %s\n", date(r.EvidenceUntil))
	if r.Note != "" {
		fmt.Fprintf(w, "note           %s\n", clip.Cell(r.Note))
	}
	next := r.NextRetry.Answer
	if r.NextRetry.Status != 0 {
		next += fmt.Sprintf(" (%d)", r.NextRetry.Status)
	}
	fmt.Fprintf(w, "next retry     %s: %s\n", next, r.NextRetry.Detail)
}

// KeysUncertainOptions are the inputs of replayctl keys uncertain.
type KeysUncertainOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	JSON   bool

	Route string
	Limit int
}

// NewCmdKeysUncertain returns the keys uncertain command. runF, when not nil, replaces the run
// function (tests).
func NewCmdKeysUncertain(f *cmdutil.Factory, runF func(*KeysUncertainOptions) error) *cobra.Command {
	opts := &KeysUncertainOptions{IO: f.IOStreams, Ledger: f.Ledger}
	cmd := &cobra.Command{
		Use:   "uncertain [--route R] [--limit N]",
		Short: "List the API records awaiting a decision, oldest first",
		Long: `List the records whose outcome nobody knows: uncertain (a handler ended badly after its external
call started, or an expired key's look-up could not tell), and records processing under a
lease that lapsed after a call started. None is ever re-run by a retry; the service's
reconcile worker looks each up at the provider, and what it cannot settle a person resolves
with replayctl keys resolve.`,
		Example: `  replayctl keys uncertain --route "POST /v1/charges"`,
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if opts.Limit <= 0 {
				return cmdutil.UsageErrorf("--limit must be positive, got %d", opts.Limit)
			}
			if runF != nil {
				return runF(opts)
			}
			return keysUncertainRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Route, "route", "", "one route (default: every route)")
	cmd.Flags().IntVar(&opts.Limit, "limit", 100, "at most this many records")
	return cmd
}

func keysUncertainRun(ctx context.Context, opts *KeysUncertainOptions) error {
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	recs, err := keys.Uncertain(ctx, store, opts.Route, opts.Limit)
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "KeyRecords", struct {
			Records []keys.RecordView `json:"records"`
		}{recs})
	}
	if len(recs) == 0 {
		fmt.Fprintln(opts.IO.Out, "no API record awaits a decision")
		return nil
	}
	t := cmdutil.NewListTable(opts.IO.Out, opts.IO.IsStdoutTTY())
	t.Header("ROUTE", "KEY HASH", "SCOPE HASH", "STATE", "CALLS", "SINCE", "OPERATION ID", "NOTE")
	for _, r := range recs {
		_ = t.Append(r.Route, r.KeyHash, r.ScopeHash, string(r.State), strconv.Itoa(r.CallsStarted),
			r.UpdatedAt.Format(time.RFC3339), r.OperationID, cmdutil.Dash(clip.Cell(r.Note)))
	}
	return t.Render()
}
