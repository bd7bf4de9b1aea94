// Package jobscmd is `replayctl jobs`: the jobs in the ledger, filtered.
package jobscmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/jobhistory"
	"github.com/replayctl/replayctl/ledger"
)

// JobsOptions are the inputs of replayctl jobs.
type JobsOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	Now    func() time.Time
	JSON   bool
	// Since is --since as typed; the run parses it into List.Since.
	Since string
	List  jobhistory.ListOptions
}

// NewCmdJobs returns the jobs command. runF, when not nil, replaces the run function (tests).
func NewCmdJobs(f *cmdutil.Factory, runF func(*JobsOptions) error) *cobra.Command {
	opts := &JobsOptions{IO: f.IOStreams, Ledger: f.Ledger, Now: f.Now}
	cmd := &cobra.Command{
		Use:   "jobs [--consumer C] [--status S] [--since T] [--limit N]",
		Short: "List replay jobs, newest first, with their counts and last change",
		Long: `List the jobs the ledger holds, newest first: ID, consumer, status, effect versions
(from->to), targets, completed/failed/uncertain, who changed the job last and when, and why
(the reason of its last pause, resume, cancel or stop, else the plan's reason).

--since keeps jobs planned or changed since then: a length of time before now (90m, 6h, 2d,
1w) or an RFC 3339 time. --status is one of:
  ` + strings.Join(jobhistory.Statuses, ", ") + `.

The counts are status's, for every job in one query. --json prints an array of jobs with
stable field names (id, consumer, status, effectVersion, targets, completed, failed,
uncertain, reason, createdBy, createdAt, statusBy, statusAt, statusReason ...).

It reads only.`,
		Example: `  # what ran this week, and what is still open
  replayctl jobs --since 1w
  replayctl jobs --consumer billing --status paused

  # the last ten, for a script
  replayctl jobs --limit 10 --jq '.items[] | select(.uncertain > 0) | .jobId'`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(opts)
			}
			return jobsRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.List.Consumer, "consumer", "", "only this consumer's jobs")
	fl.StringVar(&opts.List.Status, "status", "", "only jobs in this status ("+strings.Join(jobhistory.Statuses, ", ")+")")
	fl.StringVar(&opts.Since, "since", "", "only jobs planned or changed since: a length of time before now (2d, 90m) or an RFC 3339 time")
	fl.IntVar(&opts.List.Limit, "limit", 50, "list at most this many jobs, newest first (0: all)")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(jobhistory.Statuses, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func jobsRun(ctx context.Context, opts *JobsOptions) error {
	if opts.List.Limit < 0 {
		return cmdutil.UsageErrorf("--limit %d: want 0 (all) or a positive number", opts.List.Limit)
	}
	since, err := cmdutil.ParseTimeFlag("since", opts.Since, opts.Now())
	if err != nil {
		return err
	}
	req := opts.List
	if since != nil {
		req.Since = *since
	}
	store, err := opts.Ledger(ctx)
	if err != nil {
		return err
	}
	jobs, err := jobhistory.List(ctx, store, req)
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "JobList", jobs)
	}
	if len(jobs) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "no jobs match")
		return nil
	}
	return printJobs(opts.IO, jobs)
}

// minReasonRoom is the narrowest reason column worth drawing; with less room the reasons are
// listed below the table instead.
const minReasonRoom = 30

// printJobs writes the table. On a terminal a row fits the terminal's width: the least needed
// columns are dropped first (the version, who and when), the reasons are cut to the room left, or
// listed below the table when too little is left (--json and a pipe get every column whole).
func printJobs(ios *iostreams.IOStreams, jobs []jobhistory.JobSummary) error {
	header := []string{"JOB", "CONSUMER", "STATUS", "VER", "TARGETS", "OK/FAIL/UNC", "BY", "WHEN", "REASON"}
	rows := make([][]string, len(jobs))
	for i, j := range jobs {
		reason := j.StatusReason
		if reason == "" {
			reason = j.Reason
		}
		rows[i] = []string{j.ID, j.Consumer, string(j.Status),
			fmt.Sprintf("%d->%d", j.EffectVersion.From, j.EffectVersion.To),
			strconv.FormatInt(j.Targets, 10),
			fmt.Sprintf("%d/%d/%d", j.Completed, j.Failed, j.Uncertain),
			j.LastBy(), j.LastAt().UTC().Format("2006-01-02 15:04"), clip.Line(reason)}
	}
	tty := ios.IsStdoutTTY()
	below := false
	width := iostreams.Width(ios.Out)
	if tty {
		// The version, who and when go first, least needed first, until a reason has room.
		header, rows = fitBeforeReason(header, rows, width-minReasonRoom, 3, 6, 7)
		room := width - cmdutil.ColumnsWidth(header[:len(header)-1], rows)
		below = room < minReasonRoom
		for _, r := range rows {
			if !below {
				r[len(r)-1] = clip.Runes(r[len(r)-1], room)
			}
		}
	}
	t := cmdutil.NewListTable(ios.Out, tty)
	if below {
		t.Header(header[:len(header)-1])
	} else {
		t.Header(header)
	}
	for _, r := range rows {
		if below {
			r = r[:len(r)-1]
		}
		if err := t.Append(r); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if below {
		fmt.Fprintln(ios.Out, "\nreasons:")
		idWidth := cmdutil.ColumnsWidth(header[:1], rows)
		for _, r := range rows {
			line := fmt.Sprintf("  %-*s%s", idWidth, r[0], r[len(r)-1])
			fmt.Fprintln(ios.Out, clip.Runes(line, width))
		}
	}
	return nil
}

// fitBeforeReason is cmdutil.FitColumns over every column but the last (the reason), which it
// keeps.
func fitBeforeReason(header []string, rows [][]string, width int, drop ...int) ([]string, [][]string) {
	last := len(header) - 1
	base := make([][]string, len(rows))
	for i, r := range rows {
		base[i] = r[:last]
	}
	h, kept := cmdutil.FitColumns(header[:last], base, width, drop...)
	for i := range kept {
		kept[i] = append(kept[i], rows[i][last])
	}
	return append(h, header[last]), kept
}
