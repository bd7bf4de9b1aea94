package keyscmd

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/keys"
	"github.com/replayctl/replayctl/ledger"
)

// KeysPruneOptions are the inputs of replayctl keys prune.
type KeysPruneOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	Now    func() time.Time
	JSON   bool

	AllRoutes bool
	DryRun    bool
	Yes       bool
	// AsOf, TombstoneRetention, CountsRetention and CompactAfter are the flags as typed.
	AsOf, TombstoneRetention, CountsRetention, CompactAfter string
	Request                                                 ledger.APIKeysPruneOptions
}

// NewCmdKeysPrune returns the keys prune command. runF, when not nil, replaces the run function
// (tests).
func NewCmdKeysPrune(f *cmdutil.Factory, runF func(*KeysPruneOptions) error) *cobra.Command {
	opts := &KeysPruneOptions{IO: f.IOStreams, Ledger: f.Ledger, Now: f.Now}
	req := &opts.Request
	cmd := &cobra.Command{
		Use:   "prune (--route R | --all-routes) [--dry-run]",
		Short: "Drop sealed responses past replay_until and turn records past evidence_until into tombstones",
		Long: `Remove what the API records no longer have to keep, by the dates the middleware wrote on each
record when it completed (the route's registered policy), with ledger prune's rules:

  - sealed responses whose replay_until passed are dropped; the record, its state, its
    fingerprint and its external reference stay, so a retry is looked up, never run blindly
  - records whose evidence_until passed become expired tombstones (hashes, state, reference
    and dates stay)
  - tombstones whose evidence_until is more than the route's tombstone retention behind are
    deleted: what the middleware registered (idempotency.Route.TombstoneRetention), five years
    where it registered none, or --tombstone-retention for every route; after that only the
    provider's look-up by operation ID stands between a very late retry and a second call
  - with --compact-after, tombstones whose evidence_until is that far behind get their compact
    form (a hash of the key and a day: about 95 bytes instead of about 500), and a prune at
    least an hour later deletes their whole rows; a request with such a key still meets it and
    goes to the route's look-up. Off by default: turn it on once every instance runs a
    middleware built from replayctl with migration 0038 or later (an older one reads whole rows
    only and would run a compacted key as new)
  - daily counts older than --counts-retention are deleted

Never pruned: processing and uncertain records. Expiry is judged in SQL against the database's
now() (or --as-of), never by a storage TTL. Batched (--batch-size rows a statement, each
committed on its own): an interrupted prune loses nothing; run it again.

--dry-run counts and changes nothing. Otherwise the counts are shown and, on a terminal, you
type "prune" to confirm; without a terminal pass --yes. Each run that removes something is
recorded in the audit log. Exits 0 when pruned or nothing was due, 2 on bad flags, 3 when not
confirmed, 1 when the database failed (run it again).`,
		Example: `  replayctl keys prune --all-routes --dry-run
  replayctl keys prune --route "POST /v1/charges" --yes --json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			req.Actor = f.Actor()
			if runF != nil {
				return runF(opts)
			}
			return keysPruneRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&req.Route, "route", "", `prune this route's records, e.g. "POST /v1/charges"`)
	fl.BoolVar(&opts.AllRoutes, "all-routes", false, "prune every route's records")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print what would be pruned; change nothing")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation (required without a terminal)")
	fl.IntVar(&req.BatchSize, "batch-size", ledger.DefaultPruneBatchSize, "most rows changed per statement")
	fl.StringVar(&opts.AsOf, "as-of", "", "judge expiry at this time instead of the database's now() (RFC 3339, a date, or a duration before now)")
	fl.StringVar(&opts.TombstoneRetention, "tombstone-retention", "", "keep every route's tombstones until their evidence_until is this far behind; default: each route's registered retention (idempotency.Route.TombstoneRetention), else "+cmdutil.SpanString(ledger.DefaultTombstoneRetention))
	fl.StringVar(&opts.CountsRetention, "counts-retention", "400d", "keep daily counts younger than this")
	fl.StringVar(&opts.CompactAfter, "compact-after", "", "give a tombstone its compact form once its evidence_until is this far behind (days as 7d, or as in 36h); off by default: only once every instance runs a middleware that reads compact tombstones")
	return cmd
}

func keysPruneRun(ctx context.Context, opts *KeysPruneOptions) error {
	req := opts.Request
	switch {
	case req.Route == "" && !opts.AllRoutes:
		return cmdutil.UsageErrorf("name what to prune: --route R for one route, or --all-routes")
	case req.Route != "" && opts.AllRoutes:
		return cmdutil.UsageErrorf("--route %q and --all-routes: give one of them", req.Route)
	case req.BatchSize < 1 || req.BatchSize > cmdutil.MaxPruneBatchSize:
		return cmdutil.UsageErrorf("--batch-size %d: must be between 1 and %d", req.BatchSize, cmdutil.MaxPruneBatchSize)
	}
	now := opts.Now()
	asOf, err := cmdutil.ParseTimeFlag("as-of", opts.AsOf, now)
	if err != nil {
		return err
	}
	if asOf != nil {
		if asOf.After(now) && !opts.DryRun {
			return cmdutil.UsageErrorf("--as-of %s is in the future: only a --dry-run may look ahead", opts.AsOf)
		}
		req.AsOf = *asOf
	}
	if opts.TombstoneRetention != "" {
		if req.TombstoneRetention, err = cmdutil.ParseSpan("tombstone-retention", opts.TombstoneRetention); err != nil {
			return err
		}
	}
	if req.CountsRetention, err = cmdutil.ParseSpan("counts-retention", opts.CountsRetention); err != nil {
		return err
	}
	if opts.CompactAfter != "" {
		if req.CompactAfter, err = cmdutil.ParseSpan("compact-after", opts.CompactAfter); err != nil {
			return err
		}
	}
	req.DryRun = opts.DryRun
	if !opts.DryRun && !opts.Yes && !opts.IO.CanPrompt() {
		return &cmdutil.ExitError{Code: cmdutil.ExitGateRefused, Err: fmt.Errorf("not confirmed: without a terminal pass --yes (see the counts with --dry-run)")}
	}
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	pr := keys.PruneRequest{Options: req}
	if !opts.Yes && !opts.DryRun {
		pr.Confirm = func(r *ledger.APIKeysPruneReport) (bool, error) {
			fmt.Fprintf(opts.IO.ErrOut, "\nkeys prune as of %s would remove %s\n", r.AsOf.UTC().Format(time.RFC3339), keysPruneSummary(r))
			return opts.IO.ConfirmTyped(strconv.Quote("prune"), "prune"), nil
		}
	}
	r, err := keys.Prune(ctx, store, pr)
	if err != nil {
		if r != nil && opts.JSON {
			_ = cmdutil.PrintJSON(opts.IO.Out, "KeyPrune", r)
			return &cmdutil.ExitError{Code: cmdutil.ExitCode(err), Reported: true, Err: err}
		}
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "KeyPrune", r)
	}
	verb := "pruned"
	if r.DryRun {
		verb = "would prune"
	}
	fmt.Fprintf(opts.IO.Out, "keys prune as of %s %s: %s\n", r.AsOf.UTC().Format(time.RFC3339), verb, keysPruneSummary(r))
	for _, h := range r.Routes {
		fmt.Fprintf(opts.IO.Out, "  tombstones of %s: before %s (the retention the route registered)\n", h.Route, h.TombstonesBefore.UTC().Format(time.RFC3339))
	}
	others := "tombstones of every other route"
	if len(r.Routes) == 0 {
		others = "tombstones"
	}
	fmt.Fprintf(opts.IO.Out, "  %s: before %s\n", others, r.TombstonesBefore.UTC().Format(time.RFC3339))
	if !r.CompactBefore.IsZero() {
		fmt.Fprintf(opts.IO.Out, "  tombstones compacted: those whose evidence_until is before %s (--compact-after)\n", r.CompactBefore.UTC().Format(time.RFC3339))
	}
	return nil
}

func keysPruneSummary(r *ledger.APIKeysPruneReport) string {
	s := fmt.Sprintf("%d sealed responses, %d records to tombstones, %d tombstones, %d daily count rows",
		r.Bodies, r.Tombstoned, r.Rows, r.DailyCounts)
	if !r.CompactBefore.IsZero() {
		s += fmt.Sprintf(", %d compacted, %d whole rows of compacted tombstones", r.Compacted, r.WholeRowsDropped)
	}
	return s
}
