package shared

import (
	"fmt"
	"strconv"
	"time"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
)

// PrintExecuteResult tells a person what the run did: a dry run says plainly that nothing was
// published; a run shows the counts, why it stopped, and what needs review.
func PrintExecuteResult(ios *iostreams.IOStreams, r *executor.Result) error {
	out, tty := ios.Out, ios.IsStdoutTTY()
	pre := r.Preflight
	if r.DryRun {
		fmt.Fprintf(out, "DRY RUN: nothing was published. Every gate passed for job %s.\n", pre.JobID)
	} else {
		fmt.Fprintf(out, "execute of job %s: %s\n", pre.JobID, r.JobStatus)
	}
	fmt.Fprintf(out, "consumer %s, effect version %d -> %d, write-forbidden %t\n", pre.Consumer, pre.EffectVersion.From, pre.EffectVersion.To, pre.WriteForbidden)
	fmt.Fprintf(out, "manifest %s, shadow verdict #%d (%s by %s)\n", pre.ManifestDigest, pre.Verdict.ID, pre.Verdict.At.UTC().Format(time.RFC3339), clip.Line(pre.Verdict.Actor))
	if pre.Drift.Drifted > 0 {
		fmt.Fprintf(out, "drift since plan: %d of %d targets skipped (%s)\n", pre.Drift.Drifted, pre.Drift.Checked, driftKinds(pre.Drift.ByKind))
	}
	if !pre.DurableFound && !r.DryRun {
		fmt.Fprintf(ios.ErrOut, "note: durable consumer %s was not found; only the ledger's in-flight count throttled publishing\n", clip.Line(pre.Durable.Name))
	}
	fmt.Fprintln(out)
	if err := PrintProgressTable(ios, progressRows(r.Final, r.DryRun, pre, r)); err != nil {
		return err
	}
	if r.DryRun {
		if len(pre.FirstTargets) > 0 {
			fmt.Fprintf(out, "\nwould publish first (of %d):\n", pre.ToPublish)
			t := cmdutil.NewTable(out, tty)
			t.Header("EVENT", "SUBJECT", "DLQ SEQ", "NATS-MSG-ID")
			for _, ft := range pre.FirstTargets {
				if err := t.Append(ft.EventID, ft.Subject, fmt.Sprint(ft.StreamSeq), ft.MsgID); err != nil {
					return err
				}
			}
			if err := t.Render(); err != nil {
				return err
			}
		}
		fmt.Fprintf(out, "\nDRY RUN: nothing was published, no status changed. Run without --dry-run to replay.\n")
		return nil
	}
	switch {
	case r.Stop != nil && r.Stop.Completed:
		fmt.Fprintf(out, "\nguard %s: its threshold was crossed, after every target settled: %s\n", clip.Line(string(r.Stop.Kind)), clip.Line(r.Stop.Message))
	case r.Stop != nil:
		fmt.Fprintf(out, "\nstopped (%s): %s\n", clip.Line(string(r.Stop.Kind)), clip.Line(r.Stop.Message))
	}
	if err := PrintReview(ios, "uncertain: review by hand, never retried automatically", r.Uncertain, r.Final.Uncertain); err != nil {
		return err
	}
	if err := PrintReview(ios, "failed", r.Failed, r.Final.Failed-r.Final.SourceFailed); err != nil {
		return err
	}
	if err := PrintNotPublished(ios, r.NotPublished, r.Final.SourceFailed); err != nil {
		return err
	}
	if r.Stop != nil && r.Stop.Kind == executor.StopCancelled {
		fmt.Fprintln(out, "cancel never reverts: what was replayed before it stays replayed")
	}
	return nil
}

func progressRows(p executor.Progress, dryRun bool, pre executor.Preflight, r *executor.Result) [][2]string {
	rows := [][2]string{
		{"targets", cmdutil.Count(p.Targets)},
		{"skipped (drifted since plan)", cmdutil.Count(p.Skipped)},
	}
	if dryRun {
		rows = append(rows, [2]string{"would publish now", cmdutil.Count(pre.ToPublish)})
	} else {
		rows = append(rows, [2]string{"published by this run", cmdutil.Count(r.Published)}, [2]string{"  of which deduplicated by JetStream", cmdutil.Count(r.Deduplicated)})
		if retried := r.LandedUnacknowledged + r.Republished; retried > 0 {
			rows = append(rows, [2]string{"  of which retried after a failed publish", cmdutil.Count(retried)},
				[2]string{"    found in the ledger, not sent again", cmdutil.Count(r.LandedUnacknowledged)})
		}
		if rate := r.PublishRate(); rate > 0 {
			took := r.PublishFinishedAt.Sub(r.PublishStartedAt).Round(time.Millisecond)
			rows = append(rows, [2]string{"  publishing took", fmt.Sprintf("%s (%.0f targets/s)", took, rate)})
		}
	}
	return append(rows,
		[2]string{"published (all runs)", cmdutil.Count(p.Published)},
		[2]string{"completed", cmdutil.Count(p.Completed)},
		[2]string{"failed", cmdutil.Count(p.Failed)},
		[2]string{"uncertain", cmdutil.Count(p.Uncertain)},
		[2]string{"in progress", cmdutil.Count(p.InProgress)},
		[2]string{"  of which retrying after a transient failure", cmdutil.Count(p.Retrying)},
		[2]string{"remaining", cmdutil.Count(p.Remaining)},
		[2]string{"external calls", cmdutil.Count(p.ExternalCalls)},
		[2]string{"external call budget", fmt.Sprintf("%d (%s)", pre.CallBudget, pre.Budget.Describe())},
		[2]string{"canary (targets judged first)", cmdutil.Count(pre.Canary)},
	)
}

// PrintProgressTable prints label-value rows (a run's progress) as a two-column table.
func PrintProgressTable(ios *iostreams.IOStreams, rows [][2]string) error {
	t := cmdutil.NewTable(ios.Out, ios.IsStdoutTTY())
	t.Header("TARGETS", "COUNT")
	for _, row := range rows {
		if err := t.Append(row[0], row[1]); err != nil {
			return err
		}
	}
	return t.Render()
}

// PrintReview lists items for manual review; total may exceed the listed items.
func PrintReview(ios *iostreams.IOStreams, title string, items []ledger.ReviewItem, total int64) error {
	if len(items) == 0 {
		return nil
	}
	out := ios.Out
	fmt.Fprintf(out, "\n%s (%d", title, total)
	if int64(len(items)) < total {
		fmt.Fprintf(out, ", first %d shown", len(items))
	}
	fmt.Fprintln(out, "):")
	t := cmdutil.NewTable(out, ios.IsStdoutTTY())
	t.Header("EVENT", "STATE", "CALLS", "UPDATED", "LAST ERROR")
	for _, it := range items {
		calls := max(it.EffectCount, it.CallsStarted)
		if err := t.Append(it.EventID, it.State, fmt.Sprint(calls), it.UpdatedAt.UTC().Format(time.RFC3339), clip.Cell(it.LastError)); err != nil {
			return err
		}
	}
	return t.Render()
}

func driftKinds(byKind map[string]int64) string {
	counts := make(map[string]int, len(byKind))
	for k, v := range byKind {
		counts[k] = int(v)
	}
	return cmdutil.JoinCounts(counts)
}

// PrintNotPublished lists the targets that failed before they reached the consumer, each with
// why: a DLQ message deleted or replaced since plan, or one NATS refused (over max_payload).
func PrintNotPublished(ios *iostreams.IOStreams, list []ledger.NotPublished, total int64) error {
	if total == 0 {
		return nil
	}
	out := ios.Out
	fmt.Fprintf(out, "\nnot published: %d targets never reached the consumer\n", total)
	t := cmdutil.NewTable(out, ios.IsStdoutTTY())
	t.Header("EVENT ID", "DLQ SEQ", "WHY")
	for _, n := range list {
		if err := t.Append(n.EventID, strconv.FormatInt(n.StreamSeq, 10), n.Detail); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if extra := total - int64(len(list)); extra > 0 {
		fmt.Fprintf(out, "and %d more (`replayctl status --json` lists the first %d)\n", extra, len(list))
	}
	return nil
}
