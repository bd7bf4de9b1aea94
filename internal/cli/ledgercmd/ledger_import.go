package ledgercmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/history"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
)

// LedgerImportOptions are the inputs of replayctl ledger import.
type LedgerImportOptions struct {
	IO      *iostreams.IOStreams
	Ledger  func(ctx context.Context) (*ledger.Store, error)
	Now     func() time.Time
	JSON    bool
	Request history.Options
}

// NewCmdLedgerImport returns the ledger import command. runF, when not nil, replaces the run
// function (tests).
func NewCmdLedgerImport(f *cmdutil.Factory, runF func(*LedgerImportOptions) error) *cobra.Command {
	opts := &LedgerImportOptions{IO: f.IOStreams, Ledger: f.Ledger, Now: f.Now}
	req := &opts.Request
	cmd := &cobra.Command{
		Use:   "import --consumer C FILE",
		Short: "Import the processed-event history a consumer had before replayctl, so a replay skips those events",
		Long: `Bring a consumer's history from the system it used before replayctl (a processed-events
table, a Redis set, an old dedup table) into the ledger. Until it is imported, an event handled
before adoption has no ledger row, and a replay plans it as a target: a second external effect
on day one. Plan warns when a DLQ holds messages older than the consumer's history.

FILE is JSON lines (.jsonl, one object a line) or CSV (.csv, with a header line) of these fields;
only eventId and processedAt are required:

  eventId         the ID the consumer deduplicates on (the Nats-Msg-Id / event ID header)
  processedAt     when the old system handled it: RFC 3339 (2026-11-30T14:05:00Z) or a date
  effectVersion   the effect version it was handled under (default --effect-version)
  state           completed (default: the effect happened) or uncertain (not known: the row
                  goes to review and is never replayed automatically)
  outcome         success (default) or business-failure, for a completed row
  requestHash     the payload's fingerprint, sha256:<hex>, with requestHashAlg (default
  requestHashAlg  canonical-json-v1); without them the event ID alone decides, as the old
                  dedup did: a later delivery is a duplicate whatever its payload
  resultHash      sha256:<hex> of the result, when the old system kept one
  effectCount     external calls it made (default 1 for completed, 0 for uncertain)
  replayUntil     when its result may no longer be replayed; evidenceUntil, when its evidence
  evidenceUntil   expires (defaults: processedAt plus the consumer's registered policy windows)
  consumer        optional; when present it must be --consumer

Every line is checked before anything is written: a bad line is reported with its number, field
and problem (the first 20 listed, all counted), and nothing is imported until the file is clean.
Then the rows are written in batches (--batch-size, each one transaction, COPY into a staging
table joined by key). A row the ledger already holds is left as it is and counted: a live
consumer's record always wins, and an interrupted import continues when run again. Result
bodies are never imported (the ledger stores them sealed by the SDK); rows compare on hashes.

The run is recorded in the audit log (action ledger.import) with the file's sha256.

Exits 0 when imported (or a dry run), 1 when interrupted or the database failed (run it again),
2 on bad flags or bad lines.`,
		Example: `  # check the file and count what would be new; writes nothing
  replayctl ledger import --consumer billing processed-orders.jsonl --dry-run

  # a CSV exported from the old dedup table, handled under effect version 1
  replayctl ledger import --consumer billing --effect-version 1 old_dedup.csv

  # one line of JSON lines
  {"eventId":"ord-1042","processedAt":"2026-11-30T14:05:00Z","effectCount":1}`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.UsageErrorf("ledger import takes one file (JSON lines or CSV), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.JSON = f.JSON()
			req.Actor = f.Actor()
			req.Path = args[0]
			if runF != nil {
				return runF(opts)
			}
			return ledgerImportRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&req.Consumer, "consumer", "", "the consumer whose history the file holds (required)")
	fl.IntVar(&req.EffectVersion, "effect-version", 1, "the effect version of a line that names none")
	fl.StringVar(&req.Format, "format", "", "jsonl or csv (default: from the file's extension)")
	fl.BoolVar(&req.DryRun, "dry-run", false, "check every line and count what would be imported; write nothing")
	fl.IntVar(&req.BatchSize, "batch-size", history.DefaultBatchSize, "most rows written per transaction")
	return cmd
}

func ledgerImportRun(ctx context.Context, opts *LedgerImportOptions) error {
	req := opts.Request
	if req.Consumer == "" {
		return cmdutil.UsageErrorf("name the consumer: --consumer C (the consumer whose history the file holds)")
	}
	if req.BatchSize < 1 || req.BatchSize > 1_000_000 {
		return cmdutil.UsageErrorf("--batch-size %d: must be between 1 and 1000000", req.BatchSize)
	}
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	req.Now = opts.Now()
	advance, _, finish := cmdutil.StepProgress(opts.IO, "ledger import", "records")
	req.Progress = advance
	rep, err := history.Import(ctx, store, req)
	finish()
	if rep == nil {
		return err
	}
	if perr := printImport(opts, rep); perr != nil {
		return errors.Join(err, perr)
	}
	if err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitCode(err), Reported: true, Err: err}
	}
	return nil
}

func printImport(opts *LedgerImportOptions, r *history.Report) error {
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "LedgerImport", r)
	}
	out, errOut := opts.IO.Out, opts.IO.ErrOut
	for _, w := range r.Warnings {
		cmdutil.PrintWarning(opts.IO, w)
	}
	if r.InvalidLines > 0 {
		fmt.Fprintf(errOut, "%s: %d lines cannot be imported; nothing was written:\n", r.File, r.InvalidLines)
		for _, e := range r.Errors {
			fmt.Fprintf(errOut, "  %s\n", e.Error())
		}
		if int64(len(r.Errors)) < r.InvalidLines {
			fmt.Fprintf(errOut, "  ... and %d more\n", r.InvalidLines-int64(len(r.Errors)))
		}
		return nil
	}
	switch {
	case r.DryRun:
		fmt.Fprintf(out, "DRY RUN: nothing was written. Importing %s into consumer %s would write:\n", r.File, r.Consumer)
	case r.Interrupted:
		fmt.Fprintf(out, "INTERRUPTED: the import of %s into consumer %s stopped after %d batches; what they wrote stays, run it again to continue:\n", r.File, r.Consumer, r.Batches)
	default:
		fmt.Fprintf(out, "imported %s into consumer %s in %d batches:\n", r.File, r.Consumer, r.Batches)
	}
	fmt.Fprintf(out, "  records            %s (%s completed, %s uncertain)\n", cmdutil.Count(r.Records), cmdutil.Count(r.Completed), cmdutil.Count(r.Uncertain))
	fmt.Fprintf(out, "  new to the ledger  %s\n", cmdutil.Count(r.Imported))
	fmt.Fprintf(out, "  already there      %s (left as the ledger had them)\n", cmdutil.Count(r.AlreadyInLedger))
	if r.WithoutFingerprint > 0 {
		fmt.Fprintf(out, "  without fingerprint %s (the event ID alone decides)\n", cmdutil.Count(r.WithoutFingerprint))
	}
	if r.OldestProcessedAt != nil {
		fmt.Fprintf(out, "  processed          %s to %s\n", r.OldestProcessedAt.Format(time.RFC3339), r.NewestProcessedAt.Format(time.RFC3339))
	}
	if r.HistoryStartsAt != nil {
		fmt.Fprintf(out, "  history starts at  %s (plan warns about DLQ messages older than this)\n", r.HistoryStartsAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(out, "  file               %s\n", r.FileDigest)
	return nil
}
