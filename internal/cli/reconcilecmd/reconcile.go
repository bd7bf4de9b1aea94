// Package reconcilecmd is `replayctl reconcile` and `reconcile resolve`: uncertain ledger rows
// settled by the consumer's look-up or by a person.
package reconcilecmd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
	"github.com/replayctl/replayctl/reconcile"
)

// ReconcileOptions are the inputs of replayctl reconcile.
type ReconcileOptions struct {
	IO        *iostreams.IOStreams
	Ledger    func(ctx context.Context) (*ledger.Store, error)
	JetStream func(ctx context.Context) (jetstream.JetStream, func(), error)
	JSON      bool

	Yes     bool
	Request reconcile.Options
}

// NewCmdReconcile returns the reconcile command. runF, when not nil, replaces the run function
// (tests).
func NewCmdReconcile(f *cmdutil.Factory, runF func(*ReconcileOptions) error) *cobra.Command {
	opts := &ReconcileOptions{IO: f.IOStreams, Ledger: f.Ledger, JetStream: f.JetStream}
	req := &opts.Request
	cmd := &cobra.Command{
		Use:   "reconcile --consumer C",
		Short: "Settle uncertain ledger rows by asking the consumer whether their effect happened",
		Long: `List a consumer's uncertain ledger rows (an external call may have happened, its outcome is
unknown: the SDK never retries them) and ask the consumer's look-up responder, on
replay.reconcile.<consumer>, about each one. The look-up asks the provider, never writes, and
answers one verdict per row:

  happened       the effect exists: the row becomes reconciled, counts as done everywhere (its job
                 target becomes completed) and is never replayed
  not_happened   the provider has no trace of it: the row stays uncertain, marked manual_review
  unknown        the look-up cannot tell: the row stays uncertain, marked manual_review

Stuck leases are listed too: rows still processing whose lease lapsed over 15 minutes ago after
an external call started, with no message left to bring the SDK back to them (ledger stats warns
of them). They are uncertain in all but name; a verdict settles them as one, and the table marks
them "stuck lease".

Nothing is ever released for a retry: a "not charged" answer can itself be wrong (a charge still
settling), so a person decides. Every change is one audit entry; a row that changed between the
listing and the apply is left alone and reported. The table shows each row's event, version,
job, age, calls, recorded references and last error, then the verdict and what was done.

--dry-run asks the look-ups (they only read) and changes nothing. Otherwise the verdicts are
applied after a confirmation on a terminal (type the consumer name), or with --yes in CI.
--older-than skips rows that became uncertain recently, whose provider call may still settle.

A consumer built on the Go SDK answers look-ups when consumer.Config.Lookup is set; other
languages follow docs/protocol.md. Without a responder reconcile says so and changes nothing.

Exits 0 when every listed row was reconciled (or none is uncertain), 5 when rows remain for
manual review (or unanswered, or beyond --max), 1 when no look-up responder answers or NATS is
unreachable, 3 when not confirmed, 2 on bad flags. A dry run exits as the real run would.`,
		Example: `  # what would the look-up say? changes nothing
  replayctl reconcile --consumer billing --dry-run

  # the rows of one replay job, uncertain for an hour at least; confirm on the terminal
  replayctl reconcile --consumer billing --job job-20261202-0300-3f9c --older-than 1h

  # CI: apply without a prompt, the report as JSON; exit 5 means rows are left for a person
  replayctl reconcile --consumer billing --yes --json > reconcile.json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.JSON = f.JSON()
			req.Actor = f.Actor()
			if runF != nil {
				return runF(opts)
			}
			return reconcileRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&req.Consumer, "consumer", "", "consumer whose uncertain rows to reconcile (required)")
	fl.StringVar(&req.JobID, "job", "", "only the rows written by this replay job")
	fl.Var(cmdutil.NewDurationValue(&req.OlderThan, 0), "older-than", "only rows uncertain for at least this long, e.g. 1h (0: all)")
	fl.BoolVar(&req.DryRun, "dry-run", false, "ask the look-ups and print their verdicts; change nothing")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation (required without a terminal)")
	fl.Var(cmdutil.NewDurationValue(&req.Timeout, 5*time.Second), "timeout", "how long to wait for each look-up reply")
	fl.IntVar(&req.Concurrency, "concurrency", 4, "look-ups in flight at once (1-64)")
	fl.IntVar(&req.Max, "max", 1000, "most rows asked about in one run; the rest wait for the next run")
	_ = cmd.MarkFlagRequired("consumer")
	cmd.AddCommand(NewCmdReconcileResolve(f, nil))
	return cmd
}

func reconcileRun(ctx context.Context, opts *ReconcileOptions) error {
	req := opts.Request
	// The domain package reads zero as "the default"; on the command line a typed 0 is a mistake.
	switch {
	case req.Timeout <= 0:
		return cmdutil.UsageErrorf("--timeout %s: must be positive, e.g. 5s", req.Timeout)
	case req.Concurrency < 1:
		return cmdutil.UsageErrorf("--concurrency %d: must be between 1 and 64", req.Concurrency)
	case req.Max < 1:
		return cmdutil.UsageErrorf("--max %d: must be at least 1", req.Max)
	}
	if err := req.Normalise(); err != nil {
		return err
	}
	if !opts.Yes && !req.DryRun {
		req.Confirm = confirmReconcile(opts.IO)
	}
	var finishProgress func()
	req.Progress, req.Stage, finishProgress = cmdutil.StepProgress(opts.IO, "asking look-ups", "rows")
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	js, closeNATS, err := opts.JetStream(ctx)
	if err != nil {
		return err
	}
	defer closeNATS()
	r, err := reconcile.Run(ctx, js.Conn(), store, req)
	finishProgress()
	if r == nil {
		return err
	}
	if opts.JSON {
		if perr := cmdutil.PrintJSON(opts.IO.Out, "Reconcile", r); perr != nil {
			return perr
		}
	} else if perr := printReconcileReport(opts.IO, r); perr != nil {
		return perr
	}
	switch {
	case err != nil:
		return &cmdutil.ExitError{Code: cmdutil.ExitCode(err), Reported: opts.JSON, Err: err}
	case r.NeedsReview():
		return &cmdutil.ExitError{Code: cmdutil.ExitNeedsReview, Reported: opts.JSON, Err: reviewMessage(r)}
	}
	return nil
}

// reviewMessage says what is left for a person after a run that finished.
func reviewMessage(r *reconcile.Report) error {
	t := r.Totals
	msg := fmt.Sprintf("%d uncertain rows of consumer %s remain for manual review", t.Remaining, r.Consumer)
	if r.DryRun {
		msg = fmt.Sprintf("dry run: %d uncertain rows of consumer %s would remain for manual review", t.Remaining, r.Consumer)
	}
	var why []string
	if n := t.NotHappened + t.Unknown; n > 0 {
		why = append(why, fmt.Sprintf("%d answered not_happened or unknown: check the provider by hand", n))
	}
	if t.Unanswered > 0 {
		why = append(why, fmt.Sprintf("%d got no usable reply: run reconcile again", t.Unanswered))
	}
	if t.Changed > 0 {
		why = append(why, fmt.Sprintf("%d changed since they were listed and were left alone: run reconcile again", t.Changed))
	}
	if r.Truncated {
		why = append(why, "more rows match than --max: run reconcile again for them")
	}
	if len(why) > 0 {
		msg += " (" + strings.Join(why, "; ") + ")"
	}
	return fmt.Errorf("%s", msg)
}

// confirmReconcile asks on a terminal for the consumer name; without one it declines, so the run
// tells the operator to pass --yes.
func confirmReconcile(ios *iostreams.IOStreams) func(*reconcile.Report) (bool, error) {
	return func(r *reconcile.Report) (bool, error) {
		if !ios.CanPrompt() {
			return false, nil
		}
		w, t := ios.ErrOut, r.Totals
		fmt.Fprintf(w, "\nApply the look-up verdicts to %d uncertain rows of consumer %s:\n", t.Listed-t.Unanswered, r.Consumer)
		fmt.Fprintf(w, "  reconciled (happened, never replayed)    %d\n", t.Happened)
		fmt.Fprintf(w, "  manual review (not_happened)             %d\n", t.NotHappened)
		fmt.Fprintf(w, "  manual review (unknown)                  %d\n", t.Unknown)
		if t.Unanswered > 0 {
			fmt.Fprintf(w, "  left as they are (no usable reply)       %d\n", t.Unanswered)
		}
		return ios.ConfirmTyped("the consumer name", r.Consumer), nil
	}
}

// printReconcileReport tells a person what the run found and did; a dry run or an unconfirmed
// run says plainly that nothing was changed.
func printReconcileReport(ios *iostreams.IOStreams, r *reconcile.Report) error {
	out := ios.Out
	scope := "consumer " + r.Consumer
	if r.JobID != "" {
		scope += ", job " + r.JobID
	}
	if r.OlderThan != "" {
		scope += ", uncertain for " + r.OlderThan + " or more"
	}
	switch {
	case r.DryRun:
		fmt.Fprintf(out, "DRY RUN: nothing was changed. Look-up verdicts on %s for %s:\n", clip.Line(r.Subject), clip.Line(scope))
	case len(r.Rows) == 0:
		fmt.Fprintf(out, "no uncertain ledger rows for %s: nothing to reconcile\n", clip.Line(scope))
		return nil
	case !r.Applied:
		fmt.Fprintf(out, "NOT APPLIED: nothing was changed. Look-up verdicts on %s for %s:\n", clip.Line(r.Subject), clip.Line(scope))
	default:
		fmt.Fprintf(out, "reconcile of %s (run %s):\n", clip.Line(scope), clip.Line(r.RunID))
	}
	if len(r.Rows) > 0 {
		t := cmdutil.NewTable(out, ios.IsStdoutTTY())
		t.Header("EVENT", "VERSION", "JOB", "AGE", "CALLS", "REFS", "LAST ERROR", "VERDICT", "OUTCOME", "DETAIL")
		for _, row := range r.Rows {
			verdict, detail := row.Verdict, row.Detail
			if row.Outcome == reconcile.OutcomeUnanswered {
				verdict, detail = "-", row.Error
			}
			if err := t.Append(row.EventID, fmt.Sprint(row.EffectVersion), cmdutil.Dash(row.JobID),
				cmdutil.SecondsText(row.UncertainForSeconds), fmt.Sprint(row.Calls),
				clip.Cell(refsCell(row.ExternalRefs)), clip.Cell(lastErrorCell(row)), verdict, row.Outcome, clip.Cell(detail)); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	tt := r.Totals
	fmt.Fprintf(out, "\nlisted %d: happened %d, not_happened %d, unknown %d, unanswered %d\n",
		tt.Listed, tt.Happened, tt.NotHappened, tt.Unknown, tt.Unanswered)
	if r.Applied {
		fmt.Fprintf(out, "reconciled %d, marked for manual review %d, changed since listed (left alone) %d, still uncertain %d\n",
			tt.Reconciled, tt.ManualReview, tt.Changed, tt.Remaining)
	}
	if r.Truncated {
		fmt.Fprintf(out, "more uncertain rows match than --max: run reconcile again for the rest\n")
	}
	if !r.Applied {
		fmt.Fprintf(out, "\nnothing was changed in the ledger. Run without --dry-run (and confirm, or --yes) to apply.\n")
	}
	return nil
}

// lastErrorCell is the row's last error; a stuck lease, which has none of its own, says so.
func lastErrorCell(row reconcile.Row) string {
	if !row.StuckLease {
		return row.LastError
	}
	if row.LastError == "" {
		return "stuck lease: lapsed after a call started, no redelivery"
	}
	return "stuck lease: " + row.LastError
}

// refsCell renders recorded calls as kind=ref, one per call, for the table.
func refsCell(raw json.RawMessage) string {
	var refs []protocol.Effect
	if json.Unmarshal(raw, &refs) != nil {
		return string(raw)
	}
	parts := make([]string, 0, len(refs))
	for _, e := range refs {
		switch {
		case e.Ref != "":
			parts = append(parts, e.Kind+"="+e.Ref)
		case e.Suppressed:
			parts = append(parts, e.Kind+" (suppressed)")
		default:
			parts = append(parts, e.Kind)
		}
	}
	return cmdutil.Dash(strings.Join(parts, ","))
}
