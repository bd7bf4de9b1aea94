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

// KeysStatsOptions are the inputs of replayctl keys stats.
type KeysStatsOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	Now    func() time.Time
	JSON   bool

	Route string
	// Since is --since as typed.
	Since string
}

// NewCmdKeysStats returns the keys stats command. runF, when not nil, replaces the run function
// (tests).
func NewCmdKeysStats(f *cmdutil.Factory, runF func(*KeysStatsOptions) error) *cobra.Command {
	opts := &KeysStatsOptions{IO: f.IOStreams, Ledger: f.Ledger, Now: f.Now}
	cmd := &cobra.Command{
		Use:   "stats [--route R] [--since 7d]",
		Short: "Per route: requests, replays, conflicts, payload mismatches per client, uncertain records",
		Long: `Report each API route's idempotency figures since --since (whole UTC days), from the counts the
middleware adds to the ledger every few seconds, and the records awaiting a decision now, each
against the design's thresholds (the same as ledger stats'):

  replay rate      replays of all keyed requests; above 0.5 % clients retry too much
  in progress      requests answered 409 because the first with their key still ran
  mismatches       a key reused with a different body (422), per client per day; ten a day
                   from one client says: check that client's key generation
  uncertain        records whose outcome nobody knows; one older than 15 minutes means the
                   reconcile worker could not settle it and a person must
  lapsed leases    records processing under a lapsed lease after a call started

The records each route holds (--json records) are counted up to 100,000 and estimated from
PostgreSQL's statistics beyond (recordsEstimated), so the report costs the same at any size.

It reads only and exits 0 even with warnings; alert on the JSON:
replayctl keys stats --json | jq -e '.warnings | length == 0'.`,
		Example: `  replayctl keys stats
  replayctl keys stats --route "POST /v1/charges" --since 30d --json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(opts)
			}
			return keysStatsRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Route, "route", "", `one route, e.g. "POST /v1/charges" (default: every route)`)
	cmd.Flags().StringVar(&opts.Since, "since", "7d", "start of the window: a length of time before now (7d), a date or an RFC 3339 time")
	return cmd
}

func keysStatsRun(ctx context.Context, opts *KeysStatsOptions) error {
	now := opts.Now()
	since, err := cmdutil.ParseTimeFlag("since", opts.Since, now)
	if err != nil {
		return err
	}
	if since == nil {
		return cmdutil.UsageErrorf("--since must not be empty")
	}
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	r, err := keys.Stats(ctx, store, *since, now, opts.Route)
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "KeyStats", r)
	}
	printKeysStats(opts.IO, r)
	return nil
}

func printKeysStats(ios *iostreams.IOStreams, r *keys.StatsReport) {
	out := ios.Out
	if len(r.Routes) == 0 {
		fmt.Fprintf(out, "no API route has keyed requests or records since %s\n", r.Since.Format(time.DateOnly))
		return
	}
	fmt.Fprintf(out, "API idempotency since %s (UTC days)\n\n", r.Since.Format(time.DateOnly))
	t := cmdutil.NewTable(out, ios.IsStdoutTTY())
	t.Header("ROUTE", "REQUESTS", "REPLAYS", "REPLAY RATE", "409", "422", "UNCERTAIN NOW", "OLDEST UNCERTAIN", "LAPSED")
	for _, s := range r.Routes {
		oldest := "-"
		if s.Uncertain > 0 {
			oldest = (time.Duration(s.OldestUncertainAgeSeconds) * time.Second).String()
		}
		_ = t.Append(s.Route, strconv.FormatInt(s.Requests, 10), strconv.FormatInt(s.Replays, 10),
			fmt.Sprintf("%.2f%%", 100*s.ReplayRate), strconv.FormatInt(s.InProgress, 10), strconv.FormatInt(s.Mismatches, 10),
			strconv.FormatInt(s.Uncertain, 10), oldest, strconv.FormatInt(s.LapsedLeases, 10))
	}
	_ = t.Render()
	if len(r.Warnings) == 0 {
		fmt.Fprintln(out, "\nno warning")
		return
	}
	fmt.Fprintln(out)
	for _, w := range r.Warnings {
		fmt.Fprintf(out, "warning: %s\n  do: %s\n", w.Summary, w.Action)
	}
}
