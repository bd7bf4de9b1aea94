package statuscmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobtype"
)

// minWatchInterval keeps a typo such as --interval 2ms from querying the ledger in a loop.
const minWatchInterval = 100 * time.Millisecond

// ClearScreen moves the cursor home and clears the terminal, so each report replaces the last.
const ClearScreen = "\x1b[H\x1b[2J"

func watchRun(ctx context.Context, opts *StatusOptions) error {
	store, jobID, err := cmdutil.LedgerAndJob(ctx, opts.JobID, opts.Ledger)
	if err != nil {
		return err
	}
	ios := opts.IO
	report := func(r *executor.StatusReport) error {
		switch {
		case opts.JSON:
			// One report per line, so a pipe reads each as it comes.
			doc, err := cmdutil.MarshalDocument("Status", r)
			if err != nil {
				return err
			}
			_, err = ios.Out.Write(append(doc, '\n'))
			return err
		case ios.IsStdoutTTY():
			fmt.Fprint(ios.Out, ClearScreen)
			if err := printStatus(ios, r); err != nil {
				return err
			}
			fmt.Fprintf(ios.Out, "\n%.1f targets/s, ETA %s; guards: %s\n", shownRate(r), etaText(r.Counts.ETA), guardsText(r))
			if job.Final(r.Status) {
				fmt.Fprintf(ios.Out, "job %s has ended (%s): nothing more to watch\n", clip.Line(r.JobID), r.Status)
			} else {
				fmt.Fprintf(ios.Out, "watching every %s; Ctrl-C stops\n", opts.Interval)
			}
			return nil
		default:
			_, err := fmt.Fprintln(ios.Out, watchLine(r, time.Now()))
			return err
		}
	}
	return executor.Watch(ctx, store, executor.WatchOptions{Interval: opts.Interval, Report: report,
		StatusOptions: executor.StatusOptions{JobID: jobID, JetStream: opts.JetStream}})
}

// watchLine is one report on one line, for logs: what a person scanning them needs, in the same
// order each time.
func watchLine(r *executor.StatusReport, now time.Time) string {
	p := r.Counts
	var b strings.Builder
	fmt.Fprintf(&b, "%s job %s %s", now.UTC().Format(time.RFC3339), clip.Line(r.JobID), clip.Line(p.State))
	fmt.Fprintf(&b, ": %d/%d settled (%d completed, %d failed, %d uncertain), %d in progress (%d retrying), %d remaining",
		p.Completed+p.Failed+p.Uncertain, p.Targets-p.Skipped, p.Completed, p.Failed, p.Uncertain, p.InProgress, p.Retrying, p.Remaining)
	fmt.Fprintf(&b, "; %.1f targets/s, ETA %s", shownRate(r), etaText(p.ETA))
	if p.Reason != "" {
		fmt.Fprintf(&b, "; %s", clip.Line(p.Reason))
	}
	fmt.Fprintf(&b, "; guards: %s", guardsText(r))
	if len(r.Instances) > 0 {
		parts := make([]string, 0, len(r.Instances))
		for _, s := range r.Instances {
			owner := s.Owner
			if owner == "" {
				owner = "(not recorded)"
			}
			part := fmt.Sprintf("%s %d done, %d in progress", clip.Line(owner), s.Completed, s.InProgress)
			if s.Lapsed > 0 {
				part += fmt.Sprintf(", %d lapsed", s.Lapsed)
			}
			if s.InProgress+s.Lapsed > 0 {
				part += ", oldest lease " + time.Duration(s.OldestLeaseSeconds*float64(time.Second)).Round(time.Second).String()
			}
			parts = append(parts, part)
		}
		fmt.Fprintf(&b, "; instances: %s", strings.Join(parts, "; "))
	}
	switch {
	case r.Durable != nil:
		fmt.Fprintf(&b, "; durable %s: %d pending, %d ack pending, %d redelivered, %d pulls waiting",
			clip.Line(r.Durable.Name), r.Durable.Pending, r.Durable.AckPending, r.Durable.Redelivered, r.Durable.WaitingPulls)
	case r.DurableNote != "":
		fmt.Fprintf(&b, "; %s", clip.Line(r.DurableNote))
	}
	return b.String()
}

// shownRate is the settled rate a person reads: 0 while the job is paused, whatever the last
// polls measured before the pause.
func shownRate(r *executor.StatusReport) float64 {
	if r.Status == jobtype.Paused || r.Counts.State == string(jobtype.Paused) {
		return 0
	}
	return r.Counts.Rate
}

// etaText is "-" when there is none: paused, not moving, or done.
func etaText(eta time.Duration) string {
	if eta <= 0 {
		return "-"
	}
	return eta.String()
}

// guardsText puts the counts against the thresholds: the call budget, and the run's error and
// uncertain limits when an executor recorded them.
func guardsText(r *executor.StatusReport) string {
	p := r.Counts
	parts := []string{fmt.Sprintf("calls %d", p.ExternalCalls)}
	if r.Budget != nil {
		parts[0] += fmt.Sprintf(" of budget %d", r.Budget.Budget)
	}
	if r.Executor != nil && r.Executor.Guards != nil {
		g := r.Executor.Guards
		ratio := 0.0
		if settled := p.Completed + p.Failed + p.Uncertain; settled > 0 {
			ratio = float64(p.Failed) / float64(settled)
		}
		parts = append(parts, fmt.Sprintf("failed %.1f%% (max %.1f%%)", 100*ratio, 100*g.MaxErrorRatio),
			fmt.Sprintf("uncertain %d (max %d)", p.Uncertain, g.MaxUncertain))
		// A run state written before the guard existed has no ratio: nothing to put the count against.
		if g.MaxRetryingRatio > 0 {
			parts = append(parts, fmt.Sprintf("retrying %d (max %.0f%% of those in flight)", p.Retrying, 100*g.MaxRetryingRatio))
		}
	}
	return strings.Join(parts, ", ")
}
