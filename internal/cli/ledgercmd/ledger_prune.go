package ledgercmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
)

// LedgerPruneOptions are the inputs of replayctl ledger prune.
type LedgerPruneOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	Now    func() time.Time
	JSON   bool

	DryRun bool
	Yes    bool
	// AsOf, IncidentRetention, TombstoneRetention and CompactAfter are the flags as typed; the run parses them.
	AsOf               string
	IncidentRetention  string
	TombstoneRetention string
	CompactAfter       string
	Request            ledger.PruneOptions
}

// NewCmdLedgerPrune returns the ledger prune command. runF, when not nil, replaces the run
// function (tests).
func NewCmdLedgerPrune(f *cmdutil.Factory, runF func(*LedgerPruneOptions) error) *cobra.Command {
	opts := &LedgerPruneOptions{IO: f.IOStreams, Ledger: f.Ledger, Now: f.Now}
	req := &opts.Request
	cmd := &cobra.Command{
		Use:   "prune (--consumer C | --all-consumers)",
		Short: "Drop expired result bodies, turn expired rows into tombstones, in resumable batches",
		Long: `Remove what the ledger no longer has to keep, judged by the dates the consumer SDK wrote on each
row when its effect completed:

  - rows whose evidence_until has passed become expired tombstones: the request and result
    hashes, the final state, the external refs and the dates stay; the body and every error
    text go. A copy of the event arriving later is not processed as new: the consumer's look-up
    is asked whether it happened, and without a clear answer it goes to manual review
  - with --compact-after (7d is a good start), tombstones whose evidence_until is further behind
    leave effects for their compact form (about 95 bytes instead of about 380: a hash of the event
    ID, the version, the day, the final state): a late copy still meets them as expired evidence,
    but its look-up is no longer given the tombstone's external refs or request hash. Turn it on
    only once every instance of the consumers pruned runs an SDK that reads compact tombstones
    (this release or later): an older SDK does not see them and would take a late copy for a new
    event
  - tombstones whose evidence_until is more than the consumer's tombstone retention behind are
    deleted: what its SDK registered (consumer.Config.TombstoneRetention, how long a copy of an
    event can still arrive), five years where it registered none, or --tombstone-retention for
    every consumer; after that only the message's age sends an old copy to the look-up
  - result bodies whose replay_until has passed are dropped (set to NULL); the row, its state
    and its result_hash stay, so the event still counts as done and shadow compares on the hash
  - effect_incidents (the conflicts and lapsed leases "ledger stats" counts) older than
    --incident-retention are deleted

Expiry is decided in SQL against the database's now(), or --as-of, never by a storage TTL.

Never pruned: rows in processing or uncertain, and every row of a job that is executing or
paused (its own rows and its targets' rows under any version) until the job ends.

Batched and resumable: at most --batch-size rows per transaction, each committed on its own,
oldest first, read from an index of the rows due: a prune's cost follows what is due, not the
size of the ledger. Ctrl-C, a kill or a lost connection loses nothing and leaves
nothing half-done; run the same command again and it continues.

Name what to prune: --consumer C, or every consumer with --all-consumers. --dry-run prints the
counts per consumer and changes nothing (with --as-of in the future: what will have expired by
then). Otherwise the counts are shown first and, on a terminal, you type the consumer's name
(or "all") to confirm; without a terminal pass --yes (needed even when nothing is due, so a
script behaves the same every night). Each run that removes something is recorded in the audit
log with its counts, an interrupted one too.

Exits 0 when pruned (or nothing to prune, or a dry run), 1 when interrupted or the database
failed (run it again), 2 on bad flags or an unknown consumer, 3 when not confirmed.`,
		Example: `  # what would go, per consumer; changes nothing
  replayctl ledger prune --all-consumers --dry-run

  # what will have expired by the end of the month
  replayctl ledger prune --consumer billing --dry-run --as-of 2026-12-31

  # a nightly job; smaller transactions on a busy primary
  replayctl ledger prune --all-consumers --yes --json
  replayctl ledger prune --consumer billing --yes --batch-size 2000`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			req.Actor = f.Actor()
			if runF != nil {
				return runF(opts)
			}
			return ledgerPruneRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&req.Consumer, "consumer", "", "prune this consumer's rows")
	fl.BoolVar(&req.AllConsumers, "all-consumers", false, "prune every consumer's rows")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print what would be pruned, per consumer; change nothing")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation (required without a terminal)")
	fl.IntVar(&req.BatchSize, "batch-size", ledger.DefaultPruneBatchSize, "most rows changed per transaction")
	fl.StringVar(&opts.AsOf, "as-of", "", "judge expiry at this time instead of the database's now(): an RFC 3339 time, a date, or a duration before now (36h); after now only with --dry-run")
	fl.StringVar(&opts.IncidentRetention, "incident-retention", "90d", "keep effect_incidents younger than this (days as 30d, or as in 36h)")
	fl.StringVar(&opts.CompactAfter, "compact-after", "", "move a tombstone to its compact form once its evidence_until is this far behind (days as 7d, or as in 36h); off by default: only once every consumer instance runs an SDK that reads compact tombstones")
	fl.StringVar(&opts.TombstoneRetention, "tombstone-retention", "", "keep every consumer's tombstones until their evidence_until is this far behind (days as 1825d, or as in 36h); default: each consumer's registered retention, else "+cmdutil.SpanString(ledger.DefaultTombstoneRetention))
	return cmd
}

func ledgerPruneRun(ctx context.Context, opts *LedgerPruneOptions) error {
	req := opts.Request
	if err := pruneFlags(opts, &req); err != nil {
		return err
	}
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	counted, err := store.PruneCount(ctx, req)
	if err != nil {
		return err
	}
	if opts.DryRun {
		return printPrune(opts, counted)
	}
	// Without a terminal --yes is needed even when nothing is due, so a nightly job that forgot
	// it fails on its first night rather than on the first night with something to prune.
	if !opts.Yes && !opts.IO.CanPrompt() {
		return &cmdutil.ExitError{Code: cmdutil.ExitGateRefused, Err: fmt.Errorf("not confirmed: ledger prune would remove %s; "+
			"without a terminal pass --yes (see the counts with --dry-run)", pruneSummary(counted))}
	}
	if counted.Changes() == 0 {
		counted.DryRun = false
		return printPrune(opts, counted)
	}
	if !opts.Yes {
		if err := confirmPrune(opts.IO, counted); err != nil {
			return err
		}
	}
	// The run prunes what was counted and confirmed: the same as-of, not a later now().
	req.AsOf = counted.AsOf
	req.Expected = counted.Changes()
	advance, _, finish := cmdutil.StepProgress(opts.IO, "ledger prune", "rows")
	req.Progress = advance
	r, err := store.Prune(ctx, req)
	finish()
	if r == nil {
		return err
	}
	if perr := printPrune(opts, r); perr != nil {
		return errors.Join(err, perr)
	}
	if err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitCode(err), Reported: opts.JSON, Err: err}
	}
	return nil
}

// pruneFlags checks and parses the flags into req before anything is opened.
func pruneFlags(opts *LedgerPruneOptions, req *ledger.PruneOptions) error {
	switch {
	case req.Consumer == "" && !req.AllConsumers:
		return cmdutil.UsageErrorf("name what to prune: --consumer C for one consumer, or --all-consumers for every one")
	case req.Consumer != "" && req.AllConsumers:
		return cmdutil.UsageErrorf("--consumer %s and --all-consumers: give one of them", req.Consumer)
	case req.BatchSize < 1 || req.BatchSize > cmdutil.MaxPruneBatchSize:
		return cmdutil.UsageErrorf("--batch-size %d: must be between 1 and %d", req.BatchSize, cmdutil.MaxPruneBatchSize)
	}
	asOf, err := cmdutil.ParseTimeFlag("as-of", opts.AsOf, opts.Now())
	if err != nil {
		return err
	}
	if asOf != nil {
		req.AsOf = *asOf
	}
	if req.IncidentRetention, err = cmdutil.ParseSpan("incident-retention", opts.IncidentRetention); err != nil {
		return err
	}
	if opts.CompactAfter != "" {
		if req.CompactAfter, err = cmdutil.ParseSpan("compact-after", opts.CompactAfter); err != nil {
			return err
		}
	}
	if opts.TombstoneRetention == "" {
		return nil
	}
	req.TombstoneRetention, err = cmdutil.ParseSpan("tombstone-retention", opts.TombstoneRetention)
	return err
}

func pruneSummary(r *ledger.PruneReport) string {
	return fmt.Sprintf("%d rows to tombstones, %d tombstones to their compact form, %d tombstones, %d result bodies and %d incidents",
		r.Total.Tombstoned, r.Total.Compacted, r.Total.Rows, r.Total.Bodies+r.PartitionedBodies, r.Incidents)
}

// confirmPrune asks on a terminal for the consumer's name ("all" for every consumer); another
// answer refuses like execute's confirmation gate (exit 3).
func confirmPrune(ios *iostreams.IOStreams, r *ledger.PruneReport) error {
	want := r.Consumer
	if r.AllConsumers {
		want = "all"
	}
	w := ios.ErrOut
	fmt.Fprintf(w, "\nledger prune as of %s would remove %s:\n", r.AsOf.UTC().Format(time.RFC3339), pruneSummary(r))
	for _, c := range r.Consumers {
		fmt.Fprintf(w, "  %-24s %d rows to tombstones, %d compacted, %d tombstones, %d bodies\n", c.Consumer, c.Tombstoned, c.Compacted, c.Rows, c.Bodies)
	}
	if !ios.ConfirmTyped(strconv.Quote(want), want) {
		return &cmdutil.ExitError{Code: cmdutil.ExitGateRefused, Err: fmt.Errorf("not confirmed: nothing was pruned (type %q to prune)", want)}
	}
	return nil
}

func printPrune(opts *LedgerPruneOptions, r *ledger.PruneReport) error {
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "LedgerPrune", r)
	}
	out := opts.IO.Out
	scope := "consumer " + r.Consumer
	if r.AllConsumers {
		scope = "all consumers"
	}
	asOf := r.AsOf.UTC().Format(time.RFC3339)
	switch {
	case r.DryRun:
		fmt.Fprintf(out, "DRY RUN: nothing was pruned. As of %s, ledger prune of %s would remove:\n", asOf, scope)
	case r.Interrupted:
		fmt.Fprintf(out, "INTERRUPTED: ledger prune of %s as of %s stopped after %d batches; what they removed stays removed:\n", scope, asOf, r.Batches)
	case r.Changes() == 0:
		fmt.Fprintf(out, "nothing to prune for %s as of %s.\n", scope, asOf)
		return nil
	default:
		fmt.Fprintf(out, "ledger prune of %s as of %s removed, in %d batches of at most %d rows:\n", scope, asOf, r.Batches, r.BatchSize)
	}
	t := cmdutil.NewTable(out, opts.IO.IsStdoutTTY())
	t.Header("CONSUMER", "TOMBSTONED (evidence_until passed)", "COMPACTED (--compact-after passed)", "TOMBSTONES DELETED (retention passed)", "BODIES (replay_until passed)")
	for _, c := range r.Consumers {
		if err := t.Append(c.Consumer, cmdutil.Count(c.Tombstoned), cmdutil.Count(c.Compacted), cmdutil.Count(c.Rows), cmdutil.Count(c.Bodies)); err != nil {
			return err
		}
	}
	if err := t.Append("total", cmdutil.Count(r.Total.Tombstoned), cmdutil.Count(r.Total.Compacted), cmdutil.Count(r.Total.Rows), cmdutil.Count(r.Total.Bodies)); err != nil {
		return err
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(out, "result bodies in weeks whose replay windows ended (every consumer's, dropped a partition at a time): %d\n", r.PartitionedBodies)
	fmt.Fprintf(out, "incidents recorded before %s: %d\n", r.IncidentsBefore.UTC().Format(time.RFC3339), r.Incidents)
	if r.CompactBefore.IsZero() {
		fmt.Fprintln(out, "tombstones compacted: none (--compact-after not given)")
	} else {
		fmt.Fprintf(out, "tombstones compacted: those whose evidence_until is before %s (--compact-after)\n", r.CompactBefore.UTC().Format(time.RFC3339))
	}
	for _, c := range r.Consumers {
		fmt.Fprintf(out, "tombstones of %s deleted: those whose evidence_until is before %s (%s)\n", c.Consumer,
			c.TombstonesBefore.UTC().Format(time.RFC3339), tombstoneRetentionFrom(c.TombstoneRetentionFrom))
	}
	if !r.DryRun {
		fmt.Fprintln(out, "result hashes of pruned bodies are kept; the run is recorded in the audit log (action ledger.prune)")
	}
	return nil
}

// tombstoneRetentionFrom says in words where a consumer's tombstone retention came from.
func tombstoneRetentionFrom(from string) string {
	switch from {
	case ledger.TombstoneRetentionFromOption:
		return "--tombstone-retention"
	case ledger.TombstoneRetentionFromPolicy:
		return "the retention its SDK registered"
	default:
		return "the default " + cmdutil.SpanString(ledger.DefaultTombstoneRetention) + ": its SDK registered none"
	}
}
