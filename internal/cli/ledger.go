package cli

import (
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// NewCmdLedger returns the ledger command, the parent of the ledger's lifecycle verbs.
func NewCmdLedger(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger <command>",
		Short: "Keep the ledger lean and check its health (prune, stats)",
		Long: `Look after the idempotency ledger between replays.

  prune  delete effects rows whose evidence_until passed and drop result bodies whose
         replay_until passed, in small resumable batches; --dry-run counts first
  stats  one consumer's replay rate, payload mismatches, lease expiries and uncertain rows,
         each against its warning threshold, with what to do about a warning`,
		Example: `  replayctl ledger stats --consumer billing
  replayctl ledger prune --all-consumers --dry-run`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q for %s; use prune or stats", args[0], cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(NewCmdLedgerPrune(f, nil), NewCmdLedgerStats(f, nil))
	return cmd
}

// parseSpan reads a length of time as Go writes it ("36h", "90m") or in days ("30d"), the unit
// retention and report windows are thought in. It must be positive.
func parseSpan(flag, value string) (time.Duration, error) {
	v := strings.TrimSpace(value)
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 && n <= 100*366 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d, nil
	}
	return 0, usageErrorf("--%s %q: want a positive length of time in days (30d) or as in 24h or 90m", flag, value)
}

// spanString writes d the way parseSpan reads it, in whole days from two days up ("24h", "7d").
func spanString(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= 2*day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
