// Package migratecmd is `replayctl migrate`: the ledger's schema brought to this build's version.
package migratecmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/health"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
)

// MigrateOptions are the inputs of replayctl migrate.
type MigrateOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	JSON   bool
}

// NewCmdMigrate returns the migrate command. runF, when not nil, replaces the run function (tests).
func NewCmdMigrate(f *cmdutil.Factory, runF func(*MigrateOptions) error) *cobra.Command {
	opts := &MigrateOptions{IO: f.IOStreams, Ledger: f.Ledger}
	// The example shows the version and last migration this binary carries, read from the
	// embedded files, so it cannot go stale as migrations are added.
	version, last, err := ledger.EmbeddedSchemaVersion()
	if err != nil {
		last = err.Error()
	}
	return &cobra.Command{
		Use:   "migrate",
		Short: "Install or upgrade the ledger schema",
		Long: `Install or upgrade the ledger schema in the database of --database-url. This replayctl needs
schema version ` + strconv.Itoa(version) + ` (migration ` + last + `).

Migrations are embedded in replayctl and numbered; each runs in its own transaction and is
recorded, and an advisory lock serialises concurrent runs, so migrate is safe to repeat and to run
from two places at once. Other commands refuse an older schema and say to run migrate.

The schema goes wherever the connection's search_path points: add ?search_path=replayctl to the
URL to keep it out of public.`,
		Example: `  replayctl migrate
  replayctl migrate --database-url 'postgres://replayctl@db.internal/ops?search_path=replayctl'
  replayctl migrate --json    # {"version": ` + strconv.Itoa(version) + `, "applied": [..., "` + last + `"]} on a ledger that lacked it`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(opts)
			}
			return migrateRun(cmd.Context(), opts)
		},
	}
}

func migrateRun(ctx context.Context, opts *MigrateOptions) error {
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	res, err := store.Migrate(ctx)
	if err != nil {
		return err
	}
	rep, err := store.Replication(ctx)
	if err != nil {
		return err
	}
	replication, warning := health.JudgeReplication(rep)
	warnings := []health.Warning{}
	if warning != nil {
		warnings = append(warnings, *warning)
	}
	if opts.JSON {
		applied := res.Applied
		if applied == nil {
			applied = []string{}
		}
		return cmdutil.PrintJSON(opts.IO.Out, "Migration", struct {
			Version     int                    `json:"version"`
			Applied     []string               `json:"applied"`
			Replication health.ReplicationStat `json:"replication"`
			Warnings    []health.Warning       `json:"warnings"`
		}{res.Version, applied, replication, warnings})
	}
	if len(res.Applied) == 0 {
		fmt.Fprintf(opts.IO.Out, "ledger schema already at version %d, nothing to apply\n", res.Version)
	} else {
		fmt.Fprintf(opts.IO.Out, "ledger schema at version %d (applied: %s)\n", res.Version, strings.Join(res.Applied, ", "))
	}
	for _, w := range warnings {
		fmt.Fprintf(opts.IO.ErrOut, "warning: %s\n  do: %s\n", w.Summary, w.Action)
	}
	return nil
}
