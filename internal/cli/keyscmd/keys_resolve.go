package keyscmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/keys"
	"github.com/replayctl/replayctl/ledger"
)

// KeysResolveOptions are the inputs of replayctl keys resolve.
type KeysResolveOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	JSON   bool

	Yes        bool
	As         string
	SecretFile string
	Request    keys.ResolveRequest
}

// NewCmdKeysResolve returns the keys resolve command. runF, when not nil, replaces the run
// function (tests).
func NewCmdKeysResolve(f *cmdutil.Factory, runF func(*KeysResolveOptions) error) *cobra.Command {
	opts := &KeysResolveOptions{IO: f.IOStreams, Ledger: f.Ledger}
	req := &opts.Request
	cmd := &cobra.Command{
		Use:   "resolve (--key K | --key-hash H) --as happened|not-happened --note TEXT",
		Short: "Settle an uncertain API record as a person decided, after checking the provider",
		Long: `Settle one uncertain API record (a handler that ended badly after its external call started,
an expired key the look-up could not settle) with the decision of a person who checked the
provider, and one audit entry (keys.resolved) with the note:

  happened       the call took effect: a retry with the key is told so (410, with --ref as the
                 provider's reference), never run again
  not-happened   the call did not take effect: the next retry with the same request runs

Nothing runs now: the caller's next retry does. A key used under several callers needs
--scope-hash (replayctl keys show lists them). On a terminal you confirm by typing the key
hash's first 12 digits; without one pass --yes. Exits 0 when resolved, 2 on bad flags or no
such record, 3 when not confirmed, 1 when the record changed meanwhile.`,
		Example: `  replayctl keys resolve --route "POST /v1/charges" --key-hash hmac-sha256:86013f… \
    --as happened --ref ch_3PqX --note "provider dashboard: charged 12.60 EUR at 03:12 (INC-4711)"`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			req.Actor = f.Actor()
			req.As = apikey.Resolution(strings.ReplaceAll(strings.TrimSpace(opts.As), "-", "_"))
			secret, err := readKeySecret(opts.SecretFile, req.RawKey)
			if err != nil {
				return err
			}
			req.Secret = secret
			if runF != nil {
				return runF(opts)
			}
			return keysResolveRun(cmd.Context(), opts)
		},
	}
	lookupFlags(cmd, &req.Lookup)
	keySecretFlag(cmd, &opts.SecretFile)
	fl := cmd.Flags()
	fl.StringVar(&opts.As, "as", "", "happened or not-happened (required)")
	fl.StringVar(&req.Note, "note", "", "what you checked and where; stored on the record and in the audit log (required)")
	fl.StringVar(&req.ExternalRef, "ref", "", "the provider's reference of the call, when it happened")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation (required without a terminal)")
	_ = cmd.MarkFlagRequired("as")
	_ = cmd.MarkFlagRequired("note")
	return cmd
}

func keysResolveRun(ctx context.Context, opts *KeysResolveOptions) error {
	req := opts.Request
	if !opts.Yes {
		req.Confirm = func(r keys.RecordView) (bool, error) {
			if !opts.IO.CanPrompt() {
				return false, nil
			}
			fmt.Fprintf(opts.IO.ErrOut, "\nResolve this record as %s:\n", req.As)
			describeKeyRecord(opts.IO.ErrOut, r)
			return opts.IO.ConfirmTyped("the key hash's first 12 digits", apikey.ShortHash(r.KeyHash)), nil
		}
	}
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	rec, err := keys.Resolve(ctx, store, req)
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "KeyResolution", struct {
			Resolved   keys.RecordView   `json:"resolved"`
			Resolution apikey.Resolution `json:"resolution"`
		}{*rec, req.As})
	}
	fmt.Fprintf(opts.IO.Out, "resolved the record of key %s on %s as %s; the caller's next retry ", apikey.ShortHash(rec.KeyHash), rec.Route, req.As)
	if req.As == apikey.ResolutionHappened {
		fmt.Fprintln(opts.IO.Out, "is told it happened, and is never run")
	} else {
		fmt.Fprintln(opts.IO.Out, "with the same request runs")
	}
	return nil
}
