package ledgercmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
)

// LedgerGrantsOptions are the inputs of replayctl ledger grants.
type LedgerGrantsOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	JSON   bool

	Schema string
	Roles  ledger.Roles
}

// NewCmdLedgerGrants returns the ledger grants command. runF, when not nil, replaces the run
// function (tests).
func NewCmdLedgerGrants(f *cmdutil.Factory, runF func(*LedgerGrantsOptions) error) *cobra.Command {
	opts := &LedgerGrantsOptions{IO: f.IOStreams, Ledger: f.Ledger}
	cmd := &cobra.Command{
		Use:   "grants [--sdk-role R] [--operator-role R] [--readonly-role R]",
		Short: "Print the GRANT statements of a least-privilege ledger, for the schema owner to run",
		Long: `Print the SQL that gives each role what it needs on the ledger and nothing more:

  --sdk-role       the consumer SDK: claims, marks and settles effect rows, records incidents and
                   delivery counts, reads jobs and versions; cannot plan, pause, cancel or delete
  --operator-role  replayctl plan, shadow, execute, pause/resume/cancel, reconcile, ledger prune:
                   reads and writes every ledger table, owns none (cannot drop or alter them)
  --readonly-role  replayctl status, show, ledger stats: reads only (dashboards, CI)

Nothing is changed: review the statements and run them as the schema's owner (the role that runs
replayctl migrate), e.g. piped into psql. Run it again after a migrate that adds tables.
The roles themselves (CREATE ROLE ... LOGIN, passwords) are the DBA's; see docs/operations.md.

The schema is --schema, else the one --database-url's search_path resolves to.
A command run under a role that lacks a privilege exits 2 and names the refused statement.`,
		Example: `  replayctl ledger grants --sdk-role billing_sdk --operator-role replayctl --readonly-role replay_ro \
    --database-url postgres://owner@db/ledger | psql postgres://owner@db/ledger`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(opts)
			}
			return runLedgerGrants(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Roles.SDK, "sdk-role", "", "role the consumer SDK connects as")
	cmd.Flags().StringVar(&opts.Roles.Operator, "operator-role", "", "role replayctl's plan, shadow, execute and controls connect as")
	cmd.Flags().StringVar(&opts.Roles.ReadOnly, "readonly-role", "", "role for status, show and ledger stats")
	cmd.Flags().StringVar(&opts.Schema, "schema", "", "schema the ledger's tables are in (default: the database URL's current schema)")
	return cmd
}

func runLedgerGrants(ctx context.Context, opts *LedgerGrantsOptions) error {
	if opts.Roles == (ledger.Roles{}) {
		return cmdutil.UsageErrorf("name at least one role: --sdk-role, --operator-role or --readonly-role")
	}
	schema := opts.Schema
	if schema == "" {
		store, err := opts.Ledger(ctx)
		if err != nil {
			return err
		}
		if schema, err = store.CurrentSchema(ctx); err != nil {
			return err
		}
	}
	stmts, err := ledger.GrantStatements(schema, opts.Roles)
	if err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "LedgerGrants", struct {
			Schema     string   `json:"schema"`
			Statements []string `json:"statements"`
		}{schema, stmts})
	}
	_, err = fmt.Fprintf(opts.IO.Out, "-- replayctl ledger grants for schema %s: run as the schema's owner\n%s\n",
		schema, strings.Join(stmts, "\n"))
	return err
}
