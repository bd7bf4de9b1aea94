// Package ledgercmd is `replayctl ledger stats | prune | grants`: a consumer's ledger health,
// retention and roles.
package ledgercmd

import (
	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cmdutil"
)

// NewCmdLedger returns the ledger command, the parent of the ledger's lifecycle verbs.
func NewCmdLedger(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger <command>",
		Short: "Keep the ledger lean and check its health (prune, stats, grants, import)",
		Long: `Look after the idempotency ledger between replays.

  prune  delete effects rows whose evidence_until passed and drop result bodies whose
         replay_until passed, in small resumable batches; --dry-run counts first
  import bring a consumer's history from the system it used before replayctl, so a replay
         finds those events done
  grants the GRANT statements of a least-privilege ledger, per role, for the owner to run
  stats  one consumer's replay rate, payload mismatches, lease expiries and uncertain rows,
         each against its warning threshold, with what to do about a warning`,
		Example: `  replayctl ledger stats --consumer billing
  replayctl ledger prune --all-consumers --dry-run`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(NewCmdLedgerPrune(f, nil), NewCmdLedgerStats(f, nil), NewCmdLedgerGrants(f, nil), NewCmdLedgerImport(f, nil))
	return cmd
}
