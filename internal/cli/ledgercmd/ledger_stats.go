package ledgercmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/health"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
)

// maxStatsWindow bounds --window: a year already reads every row of a busy consumer.
const maxStatsWindow = 366 * 24 * time.Hour

// LedgerStatsOptions are the inputs of replayctl ledger stats.
type LedgerStatsOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	JSON   bool
	// Format is --format: table (default; --json wins) or openmetrics.
	Format string
	// Window is --window as typed; the run parses it into Request.Window.
	Window  string
	Request ledger.StatsOptions
}

// NewCmdLedgerStats returns the ledger stats command. runF, when not nil, replaces the run
// function (tests).
func NewCmdLedgerStats(f *cmdutil.Factory, runF func(*LedgerStatsOptions) error) *cobra.Command {
	opts := &LedgerStatsOptions{IO: f.IOStreams, Ledger: f.Ledger}
	cmd := &cobra.Command{
		Use:   "stats --consumer C [--window 24h] [--format table|openmetrics]",
		Short: "Report a consumer's replay rate, payload mismatches, lease expiries and uncertain rows",
		Long: fmt.Sprintf(`Report the health of one consumer's ledger, each figure against the threshold that warns:

  replay rate         deliveries the SDK answered from the ledger as duplicates (the event was
                      done already), of all deliveries, from the SDK's daily counts (whole
                      UTC days: the window is widened to the start of its first day);
                      warns above %.1f%%: acks are lost or late, or producers resend
  payload mismatches  messages the SDK refused because their Event-Id was stored with another
                      payload, per day; warns at %g a day: a producer reuses IDs
  lease expiries      leases the SDK found lapsed (a handler crashed, stalled or outlived its
                      lease), per day; warns at %g a day
  uncertain           rows uncertain now (any window), with the p95 and the oldest age; warns
                      when any is older than %s: an external write awaits a person
  stuck leases        rows processing under a lease that lapsed over %[4]s ago with nobody
                      taking over (their message is not coming back); warns when there is any

Rates per day are the window's count scaled to 24 hours, so a short window extrapolates. A
warning is printed with what to do next.

--format openmetrics prints the same figures as gauges (replayctl_ledger_*, labelled consumer
and window) for node_exporter's textfile collector; docs/alerts.yml has rules for them.

It reads only. It exits 0 even with warnings (it is a report; alert on the JSON instead:
jq -e '.warnings | length == 0'), 2 on bad flags or a consumer the ledger does not know.`,
			100*health.MaxReplayRate, health.MaxMismatchesPerDay, health.MaxLeaseExpiriesPerDay,
			cmdutil.SpanString(health.MaxUncertainAge)),
		Example: `  replayctl ledger stats --consumer billing
  replayctl ledger stats --consumer billing --window 7d

  # alert from cron or CI when anything warns
  replayctl ledger stats --consumer billing --json | jq -e '.warnings | length == 0'

  # every 5 minutes from cron, for node_exporter --collector.textfile.directory
  replayctl ledger stats --consumer billing --window 7d --format openmetrics > /var/lib/node_exporter/replayctl-billing.prom.tmp &&
    mv /var/lib/node_exporter/replayctl-billing.prom.tmp /var/lib/node_exporter/replayctl-billing.prom`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(opts)
			}
			return ledgerStatsRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Request.Consumer, "consumer", "", "the consumer to report on (required)")
	fl.StringVar(&opts.Window, "window", "24h", "how far back the rates look (days as 7d, or as in 24h, 90m)")
	fl.StringVar(&opts.Format, "format", "table", "table, or openmetrics for a textfile collector")
	return cmd
}

func ledgerStatsRun(ctx context.Context, opts *LedgerStatsOptions) error {
	req := opts.Request
	if req.Consumer == "" {
		return cmdutil.UsageErrorf("--consumer is required: the consumer whose ledger to report on")
	}
	switch {
	case opts.Format != "table" && opts.Format != "openmetrics":
		return cmdutil.UsageErrorf("--format %q: want table or openmetrics", opts.Format)
	case opts.Format == "openmetrics" && opts.JSON:
		return cmdutil.UsageErrorf("--format openmetrics and --json: choose one")
	}
	window, err := cmdutil.ParseSpan("window", opts.Window)
	if err != nil {
		return err
	}
	if window > maxStatsWindow {
		return cmdutil.UsageErrorf("--window %s: at most %s", opts.Window, cmdutil.SpanString(maxStatsWindow))
	}
	req.Window = window
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	st, err := health.Read(ctx, store, req)
	if err != nil {
		return err
	}
	switch {
	case opts.JSON:
		return cmdutil.PrintJSON(opts.IO.Out, "LedgerStats", st)
	case opts.Format == "openmetrics":
		return printStatsOpenMetrics(opts.IO.Out, st, opts.Window)
	}
	return printStats(opts.IO, st)
}

func printStats(ios *iostreams.IOStreams, st *health.Report) error {
	out := ios.Out
	fmt.Fprintf(out, "ledger stats of consumer %s, last %s (%s to %s)\n", clip.Line(st.Consumer), cmdutil.SpanString(time.Duration(st.WindowSeconds*float64(time.Second))),
		st.Since.UTC().Format(time.RFC3339), st.Until.UTC().Format(time.RFC3339))
	u := st.Uncertain
	uncertain := cmdutil.Count(u.Count)
	if u.Count > 0 {
		uncertain += fmt.Sprintf(" (oldest %s, p95 %s)", ageString(u.MaxAgeSeconds), ageString(u.P95AgeSeconds))
	}
	stuck := cmdutil.Count(st.StuckLeases.Count)
	if st.StuckLeases.Count > 0 {
		stuck += fmt.Sprintf(" (%d with a call started, oldest lapsed %s ago)", st.StuckLeases.CallsStarted, ageString(st.StuckLeases.OldestLapsedSeconds))
	}
	t := cmdutil.NewTable(out, ios.IsStdoutTTY())
	t.Header("METRIC", "VALUE", "WARNS WHEN", "STATUS")
	for _, row := range [][]string{
		{"replay rate", fmt.Sprintf("%.2f%% (%d duplicates of %d deliveries since %s)", 100*st.Replay.Rate, st.Replay.Duplicates,
			st.Replay.Deliveries, st.Replay.Since.UTC().Format(time.DateOnly)),
			fmt.Sprintf("> %.1f%%", 100*st.Replay.MaxRate), warnMark(st.Replay.Warn)},
		{"payload mismatches", rateString(st.Mismatches), fmt.Sprintf(">= %g a day", st.Mismatches.MaxPerDay), warnMark(st.Mismatches.Warn)},
		{"lease expiries", rateString(st.LeaseExpiries), fmt.Sprintf(">= %g a day", st.LeaseExpiries.MaxPerDay), warnMark(st.LeaseExpiries.Warn)},
		{"uncertain", uncertain, "any older than " + ageString(u.MaxAgeThresholdSeconds), warnMark(u.Warn)},
		{"stuck leases", stuck, "any lapsed over " + ageString(u.MaxAgeThresholdSeconds) + " ago", warnMark(st.StuckLeases.Warn)},
	} {
		if err := t.Append(row); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if len(st.Warnings) == 0 {
		fmt.Fprintln(out, "\nno warnings")
		return nil
	}
	pal := ios.Palette()
	for _, w := range st.Warnings {
		fmt.Fprintf(out, "\n%s %s: %s\n  what to do: %s\n", pal.Warn("WARN"), clip.Line(w.Metric), clip.Line(w.Summary), clip.Line(w.Action))
	}
	return nil
}

func warnMark(warn bool) string {
	if warn {
		return "WARN"
	}
	return "ok"
}

func rateString(r health.RateStat) string {
	return fmt.Sprintf("%d (%.1f a day)", r.Count, r.PerDay)
}

// ageString renders an age to the second, in the units an operator reads ("16m", "13m21s", "2d").
func ageString(seconds float64) string {
	return cmdutil.SpanString(time.Duration(seconds) * time.Second)
}
