// Package inspectcmd is `replayctl inspect`: what a DLQ holds, by failure group, subject, age and
// attempts, and what the ledger says of it, recording nothing.
package inspectcmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cli/shared"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/planner"
)

// inspectReason is the reason a plan of inspect carries: it is never recorded.
const inspectReason = "inspect: read-only triage of the dead letters, nothing recorded"

// NewCmdInspect returns the inspect command. runF, when not nil, replaces the run function (tests).
func NewCmdInspect(f *cmdutil.Factory, runF func(*shared.PlanOptions) error) *cobra.Command {
	opts := &shared.PlanOptions{IO: f.IOStreams, Ledger: f.Ledger, JetStream: f.JetStream, Now: f.Now}
	cmd := &cobra.Command{
		Use:   "inspect --consumer C --stream S [the plan's filters]",
		Short: "See what a DLQ holds and what a plan of it would do, recording nothing",
		Long: `Scan a DLQ stream as plan would, with the same filters, and count its messages by failure group
(the failure reason with numbers, IDs and hex masked, so "timeout after 3012 ms" and "timeout
after 2998 ms" are one group, each with an example event ID), by original subject, by age and by
delivery attempts; then say what the consumer's ledger holds for the same events: how many would
be targets, are already completed, uncertain, in flight, targets of another unfinished job (named),
past their evidence, or failed again after replays (the loop guard).

Read-only: no manifest, no job, no audit entry, and no question to the consumer's look-up. It
costs what a plan dry run costs: one scan and one join against the ledger. Pick a group with
plan's --failure-group, exactly as inspect prints it.`,
		Example: `  replayctl inspect --consumer billing --stream DLQ_BILLING --since 24h
  replayctl inspect --consumer billing --stream DLQ_BILLING --where 'payload.amountCents > 50000' --json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			opts.Request.Actor = f.Actor()
			if runF != nil {
				return runF(opts)
			}
			return inspectRun(cmd.Context(), opts)
		},
	}
	shared.BindScope(cmd.Flags(), opts)
	return cmd
}

func inspectRun(ctx context.Context, opts *shared.PlanOptions) error {
	req, err := shared.PrepareRequest(opts)
	if err != nil {
		return err
	}
	req.Reason, req.DryRun = inspectReason, true
	r, err := shared.RunPlanner(ctx, opts, req, planner.Inspect)
	if oe, ok := errors.AsType[*planner.OptionsError](err); ok {
		oe.Verb = "inspect"
	}
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "Inspection", r)
	}
	return printInspection(opts.IO, r)
}

// printInspection renders r: one table a view, the ledger's last, then what to do.
func printInspection(ios *iostreams.IOStreams, r *planner.InspectReport) error {
	out, tty := ios.Out, ios.IsStdoutTTY()
	fmt.Fprintf(out, "stream %s, consumer %s: %d messages scanned, %d usable\n", clip.Line(r.Stream), clip.Line(r.Consumer), r.Scanned, r.Usable)
	tables := []struct {
		title  string
		header []string
		rows   [][]string
	}{
		{"\nFailure groups", []string{"GROUP", "MESSAGES", "EXAMPLE EVENT"}, groupRows(r.FailureGroups)},
		{"\nOriginal subjects", []string{"SUBJECT", "MESSAGES"}, countRows(r.Subjects)},
		{"\nAge in the DLQ", []string{"AGE", "MESSAGES"}, countRows(r.Ages)},
		{"\nDelivery attempts", []string{"ATTEMPTS", "MESSAGES"}, countRows(r.Attempts)},
		{"\nThe ledger's view of these events", []string{"EVENTS", "COUNT"}, ledgerRows(r.Ledger)},
	}
	for _, tb := range tables {
		fmt.Fprintln(out, tb.title)
		t := cmdutil.NewTable(out, tty)
		t.Header(tb.header)
		for _, row := range tb.rows {
			if err := t.Append(row); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if len(r.InOtherJobs) > 0 {
		fmt.Fprintf(out, "\nunfinished jobs holding some of them: %s\n", clip.Line(fmt.Sprint(r.InOtherJobs)))
	}
	for _, w := range r.Warnings {
		cmdutil.PrintWarning(ios, w)
	}
	if len(r.FailureGroups) > 0 {
		fmt.Fprintf(ios.ErrOut, "next: replayctl plan --dry-run --consumer %s --stream %s --failure-group %q --reason ...\n",
			r.Consumer, r.Stream, r.FailureGroups[0].Group)
	}
	return nil
}

func groupRows(gs []planner.GroupCount) [][]string {
	rows := make([][]string, 0, len(gs))
	for _, g := range gs {
		rows = append(rows, []string{g.Group, strconv.FormatInt(g.Messages, 10), g.ExampleEventID})
	}
	return rows
}

func countRows(cs []planner.Count) [][]string {
	rows := make([][]string, 0, len(cs))
	for _, c := range cs {
		rows = append(rows, []string{c.Value, strconv.FormatInt(c.Messages, 10)})
	}
	return rows
}

func ledgerRows(l planner.InspectLedger) [][]string {
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	return [][]string{
		{"would be targets", n(l.WouldBeTargets)},
		{"already completed", n(l.AlreadyCompleted)},
		{"uncertain (reconcile, never replay)", n(l.Uncertain)},
		{"in flight", n(l.InFlight)},
		{"targets of another unfinished job", n(l.InOtherJob)},
		{"evidence expired", n(l.EvidenceExpired)},
		{"failed after a replay (loop guard)", n(l.FailedAfterReplay)},
		{"conflicting payloads", n(l.Conflicts)},
	}
}
