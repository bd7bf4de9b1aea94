// Package logcmd is `replayctl log`: a job's audit trail.
package logcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/actor"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/jobhistory"
	"github.com/replayctl/replayctl/ledger"
)

// LogOptions are the inputs of replayctl log.
type LogOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	JSON   bool
	// JobID is the argument: a job ID, or the path of its manifest file.
	JobID string
	// Verify checks the audit hash chain instead of printing the log.
	Verify bool
}

// NewCmdLog returns the log command. runF, when not nil, replaces the run function (tests).
func NewCmdLog(f *cmdutil.Factory, runF func(*LogOptions) error) *cobra.Command {
	opts := &LogOptions{IO: f.IOStreams, Ledger: f.Ledger}
	cmd := &cobra.Command{
		Use:   "log <job-id | job.json> | log --verify [job-id | job.json]",
		Short: "Show a job's audit trail: who did what, when and why",
		Long: `Show the audit log of one job in the order it was recorded: plan, shadow runs and verdicts,
execute's runs and canary, pause, resume, cancel, pace and drain, each with its time, actor,
action, reason and details (counts, versions, old and new values).

--json prints an array of entries (id, at, actor, action, reason, manifestDigest, details).
An unknown job exits 2. It reads only.

--verify checks the audit log's hash chain instead (of the job's entries, or of every entry
without a job): each entry carries the hash of the one before it in its consumer's chain and
its own hash over its fields, so an entry edited, deleted or inserted by hand in the ledger
breaks a link. It prints how many entries hold and names the first break (exit 3).`,
		Example: `  replayctl log job-20261202-0300-3f9c
  replayctl log job.json --jq '.items[] | select(.action == "job.pause") | .reason'
  replayctl log --verify job-20261202-0300-3f9c
  replayctl log --verify            # every entry of every chain`,
		Args: func(cmd *cobra.Command, args []string) error {
			if opts.Verify && len(args) == 0 {
				return nil
			}
			return cmdutil.JobOrManifestArg(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				opts.JobID = args[0]
			}
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(opts)
			}
			if opts.Verify {
				return verifyRun(cmd.Context(), opts)
			}
			return logRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Verify, "verify", false, "check the audit log's hash chain (of the job, or of every entry) and name the first break")
	return cmd
}

func verifyRun(ctx context.Context, opts *LogOptions) error {
	var store *ledger.Store
	var jobID string
	var err error
	if opts.JobID != "" {
		store, jobID, err = cmdutil.LedgerAndJob(ctx, opts.JobID, opts.Ledger)
	} else {
		store, err = opts.Ledger(ctx)
	}
	if err != nil {
		return err
	}
	v, verr := jobhistory.VerifyAudit(ctx, store, jobID)
	if v == nil {
		return verr
	}
	if opts.JSON {
		if err := cmdutil.PrintJSON(opts.IO.Out, "AuditVerification", v); err != nil {
			return err
		}
		if verr != nil {
			return &cmdutil.ExitError{Code: cmdutil.ExitCode(verr), Err: verr, Reported: true}
		}
		return nil
	}
	scope := "the whole audit log"
	if jobID != "" {
		scope = "job " + jobID
	}
	if verr == nil {
		fmt.Fprintf(opts.IO.Out, "audit chain of %s verified: %d entries, every hash and link holds\n", scope, v.Checked)
		return nil
	}
	t := cmdutil.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY())
	t.Header("ENTRY", "CHAIN", "JOB", "ACTION", "WHAT BROKE")
	for _, b := range v.Breaks {
		if err := t.Append(fmt.Sprint(b.ID), b.Chain, cmdutil.Dash(b.JobID), b.Action, b.Why); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	return verr
}

func logRun(ctx context.Context, opts *LogOptions) error {
	store, jobID, err := cmdutil.LedgerAndJob(ctx, opts.JobID, opts.Ledger)
	if err != nil {
		return err
	}
	entries, err := jobhistory.Log(ctx, store, jobID)
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "AuditLog", entries)
	}
	return printLog(opts.IO, entries)
}

// logReasonRoom is the most of a terminal row a reason takes, so the details stay in view.
const logReasonRoom = 36

// printLog writes the trail as a table; on a terminal the reason and details are cut so a row
// fits the terminal's width (--json and a pipe get them whole).
func printLog(ios *iostreams.IOStreams, entries []jobhistory.LogEntry) error {
	header := []string{"WHEN", "WHO", "ACTION", "REASON", "DETAILS"}
	rows := make([][]string, len(entries))
	for i, e := range entries {
		rows[i] = []string{e.At.Format(time.RFC3339), actor.Display(e.Actor), e.Action, clip.Line(e.Reason), clip.Line(detailsText(e.Details))}
	}
	tty := ios.IsStdoutTTY()
	if tty {
		room := iostreams.Width(ios.Out) - cmdutil.ColumnsWidth(header[:3], rows)
		reasonWidth := utf8.RuneCountInString(header[3])
		for _, r := range rows {
			r[3] = clip.Runes(r[3], max(len(header[3]), min(logReasonRoom, room/2)))
			reasonWidth = max(reasonWidth, utf8.RuneCountInString(r[3]))
		}
		for _, r := range rows {
			r[4] = clip.Runes(r[4], max(len(header[4]), room-reasonWidth-len(cmdutil.ListGap)))
		}
	}
	t := cmdutil.NewListTable(ios.Out, tty)
	t.Header(header)
	for _, r := range rows {
		if err := t.Append(r); err != nil {
			return err
		}
	}
	return t.Render()
}

// detailsText writes an entry's details as key=value in key order, the reason left out (it has its
// column); values that are not strings are written as JSON.
func detailsText(details map[string]any) string {
	keys := make([]string, 0, len(details))
	for k := range details {
		if k != "reason" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v, ok := details[k].(string)
		if !ok {
			b, err := json.Marshal(details[k])
			if err != nil {
				b = []byte(fmt.Sprint(details[k]))
			}
			v = string(b)
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}
