package reconcilecmd

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/reconcile"
)

// ReconcileResolveOptions are the inputs of replayctl reconcile resolve.
type ReconcileResolveOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	JSON   bool

	Yes bool
	// As is --as as typed: happened or not-happened.
	As      string
	Request reconcile.ResolveOptions
}

// NewCmdReconcileResolve returns the reconcile resolve command. runF, when not nil, replaces the
// run function (tests).
func NewCmdReconcileResolve(f *cmdutil.Factory, runF func(*ReconcileResolveOptions) error) *cobra.Command {
	opts := &ReconcileResolveOptions{IO: f.IOStreams, Ledger: f.Ledger}
	req := &opts.Request
	cmd := &cobra.Command{
		Use:   "resolve --consumer C EVENT --as happened|not-happened --note TEXT",
		Short: "Close an uncertain ledger row as a person decided, after checking the provider",
		Long: `Close one uncertain ledger row (marked for manual review by reconcile, or not looked up at
all) with the decision of a person who checked the provider, and one audit entry
(reconcile.resolved) with the note:

  happened       the effect exists: the row becomes reconciled, counts as done everywhere (its
                 job target becomes completed) and is never replayed
  not-happened   the effect does not exist: the row is released (received, no call started) and
                 its job target fails, so the next plan targets the event. Nothing is replayed
                 now: a replay is still planned, shadowed and executed like any other

Only an uncertain row is resolved. When the event is uncertain under several effect versions,
--effect-version picks the row. The row is shown and, on a terminal, resolved after you type the
event ID; without a terminal pass --yes. A row that changed between reading and resolving it (a
look-up settled it, someone else resolved it) is left alone.

Exits 0 when resolved, 2 on bad flags or an event with no uncertain row, 3 when not confirmed,
1 when the row changed meanwhile or the ledger is unreachable.`,
		Example: `  # the provider's dashboard shows the charge: never replay it
  replayctl reconcile resolve --consumer billing evt-000123 --as happened \
    --note "payments dashboard: ch_7Hq charged 10.50 EUR (INC-4521)"

  # no charge anywhere: let the next plan target it
  replayctl reconcile resolve --consumer billing evt-000124 --as not-happened --yes \
    --note "provider support confirms no charge for ord-000124 (INC-4521)"`,
		Args: eventArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.JSON = f.JSON()
			req.Actor = f.Actor()
			req.EventID = args[0]
			req.As = strings.ReplaceAll(strings.TrimSpace(opts.As), "-", "_")
			if runF != nil {
				return runF(opts)
			}
			return reconcileResolveRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&req.Consumer, "consumer", "", "consumer whose row to resolve (required)")
	fl.StringVar(&opts.As, "as", "", "happened or not-happened (required)")
	fl.StringVar(&req.Note, "note", "", "what you checked and where; stored on the row and in the audit log (required)")
	fl.IntVar(&req.EffectVersion, "effect-version", 0, "the row's effect version, when the event is uncertain under several")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation (required without a terminal)")
	_ = cmd.MarkFlagRequired("consumer")
	return cmd
}

// eventArg requires the one event ID resolve closes a row of.
func eventArg(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return cmdutil.UsageErrorf("%s takes the event ID whose uncertain row to resolve, one; got %q", cmd.Name(), args)
	}
	return nil
}

func reconcileResolveRun(ctx context.Context, opts *ReconcileResolveOptions) error {
	req := opts.Request
	if err := req.Normalise(); err != nil {
		return err
	}
	if !opts.Yes {
		req.Confirm = confirmResolve(opts.IO)
	}
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	res, err := reconcile.Resolve(ctx, store, req)
	if err != nil {
		if res != nil && opts.JSON {
			if perr := cmdutil.PrintJSON(opts.IO.Out, "ReconcileResolution", res); perr != nil {
				return perr
			}
			return &cmdutil.ExitError{Code: cmdutil.ExitCode(err), Reported: true, Err: err}
		}
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "ReconcileResolution", res)
	}
	printResolution(opts.IO, res)
	return nil
}

// confirmResolve shows the row on a terminal and asks for its event ID; without one it declines,
// so the run tells the operator to pass --yes.
func confirmResolve(ios *iostreams.IOStreams) func(*reconcile.Resolution) (bool, error) {
	return func(r *reconcile.Resolution) (bool, error) {
		if !ios.CanPrompt() {
			return false, nil
		}
		w := ios.ErrOut
		fmt.Fprintf(w, "\nResolve event %s version %d of consumer %s as %s:\n", r.EventID, r.EffectVersion, r.Consumer, r.As)
		describeResolvedRow(w, r)
		fmt.Fprintf(w, "  becomes      %s\n", resolvedOutcome(r))
		return ios.ConfirmTyped("the event ID", r.EventID), nil
	}
}

func describeResolvedRow(w io.Writer, r *reconcile.Resolution) {
	fmt.Fprintf(w, "  job          %s\n", cmdutil.Dash(r.JobID))
	fmt.Fprintf(w, "  uncertain    %s\n", cmdutil.SecondsText(r.UncertainForSeconds))
	fmt.Fprintf(w, "  calls        %d (%s)\n", r.Calls, refsCell(r.ExternalRefs))
	fmt.Fprintf(w, "  last error   %s\n", cmdutil.Dash(clip.Cell(r.LastError)))
	if r.PreviousVerdict != "" {
		fmt.Fprintf(w, "  look-up      %s: %s\n", r.PreviousVerdict, cmdutil.Dash(clip.Cell(r.PreviousNote)))
	}
}

func resolvedOutcome(r *reconcile.Resolution) string {
	if r.To == ledger.EffectReceived {
		return "received: the next plan targets it; nothing is replayed until a job executes"
	}
	return "reconciled: done, never replayed"
}

func printResolution(ios *iostreams.IOStreams, r *reconcile.Resolution) {
	out := ios.Out
	fmt.Fprintf(out, "resolved event %s version %d of consumer %s as %s (%s):\n", r.EventID, r.EffectVersion, r.Consumer, r.As, r.RunID)
	describeResolvedRow(out, r)
	fmt.Fprintf(out, "  now          %s\n", resolvedOutcome(r))
	if r.TargetUpdated {
		status := "completed"
		if r.To == ledger.EffectReceived {
			status = "failed"
		}
		fmt.Fprintf(out, "  job target   %s of job %s\n", status, r.JobID)
	}
	fmt.Fprintf(out, "  note         %s\n", r.Note)
	if r.To == ledger.EffectReceived {
		fmt.Fprintf(out, "\nnothing was replayed. To replay it: replayctl plan --consumer %s --stream <DLQ> --reason \"...\" -o job.json, then shadow and execute\n", r.Consumer)
	}
}
