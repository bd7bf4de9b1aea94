// Package plancmd is `replayctl plan`: flags into planner.Options, one call to planner.Plan, the
// summary or --json.
package plancmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cli/shared"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/planner"
)

// NewCmdPlan returns the plan command. runF, when not nil, replaces the run function (tests).
func NewCmdPlan(f *cmdutil.Factory, runF func(*shared.PlanOptions) error) *cobra.Command {
	opts := &shared.PlanOptions{IO: f.IOStreams, Ledger: f.Ledger, JetStream: f.JetStream, Now: f.Now}
	req := &opts.Request
	cmd := &cobra.Command{
		Use:   "plan --consumer C --stream S --reason TEXT -o job.json",
		Short: "Freeze a replay's boundary into a sealed manifest",
		Long: `Scan a JetStream DLQ stream, join every event ID against the consumer's ledger in bulk, and
write a sealed manifest (-o) plus a job row with status planned and an audit entry.

Kept out of the targets, counted and listed in the manifest:
  - messages without a usable Event-Id header (they cannot be deduplicated)
  - event IDs seen with different payloads in the DLQ, or with a payload that differs from the
    ledger's request hash (conflicts: a changed intent is never replayed silently)
  - event IDs already completed under any version, live or by an earlier job (alreadyCompleted,
    with the jobs that did it): a DLQ replay never repeats what is done
  - event IDs that a job of the consumer which has not finished targets (excludedInOtherJob)
  - uncertain rows and lapsed leases (an external call's outcome is unknown: reconcile by hand)
  - event IDs with a live processing lease (in flight)
  - event IDs whose ledger evidence expired (a tombstone, or no row and a message older than
    --evidence-window): plan asks the consumer's look-up once about each (evidenceLookup);
    happened is recorded reconciled (evidenceReconciled), not happened becomes a target, and
    unknown, no answer or no responder stays kept out (evidenceExpired) for review by hand
A plan in which no event is a target records nothing and says which of these took the messages
(exit 2).

--backfill plans from a retained stream of original messages instead: each message replays to
its own subject, and the targets are the events completed under an older version (re-processing
after a fix); events never completed are kept out (notProcessed). A write-forbidden completion
never counts as done.

The replay runs under a new effect version, by default one above the highest the ledger holds for
the consumer; a version that is not above it is refused. Expected external calls come from the
ledger's recorded effect_count (the manifest says how).

A --consumer the ledger holds nothing for (no effects row, version or job) is refused as a typo,
naming the consumers it knows (exit 2); pass --new-consumer for the first replay of a new one.

--since and --until take an RFC 3339 time, a date, or a duration before now (6h), and apply to the
DLQ stream's storage time. --max keeps the oldest N eligible events.

Selection, recorded in the manifest's source.selection and covered by its digest:
  --ids-from FILE|-        only these event IDs (one a line, # comments); IDs no message carries
                           are reported and listed, never dropped silently
  --exclude-ids-from FILE  leave these event IDs out
  --failure-group G        only messages whose failure reason is in this group: the reason with
                           numbers, IDs and hex masked, as replayctl inspect shows it
  --where EXPR             a CEL expression over payload (the JSON body) and headers (name to
                           first value) that must be true, e.g.
                           payload.amountCents > 50000 && headers["Dlq-Reason"].startsWith("timeout");
                           a body that is not JSON never matches (counted as whereNotJson)
--to-subject replays every target to another subject than its Dlq-Original-Subject (a renamed
service, a canary instance); a subject no stream captures is refused. --strip-header NAME leaves
a header of the DLQ message off the replay (never Event-Id or a Replay-* header).

The loop guard keeps out an event whose replays by replayctl failed and were dead-lettered again
--failed-replay-limit times (2): failedAfterReplay; --include-failed-replays takes them in.

--dry-run prints every figure plan would and records nothing: no manifest file, no job, no audit
entry, and no question to the consumer's look-up (whose answers would be written).`,
		Example: `  replayctl plan --consumer billing --stream DLQ_BILLING \
    --reason "payments provider outage INC-4521 fixed; re-run failed charges" \
    --ticket INC-4521 --since 6h --failure-match 'timeout|503' -o job.json

  # re-process the orders version 1 completed, after the fee fix, with every call suppressed first
  replayctl plan --backfill --consumer billing --stream BILLING --since 2026-11-01 \
    --reason "fee rounding fixed in v2; recompute the receipts of November" --write-forbidden -o fees.json

  # see what a selection would pick, recording nothing
  replayctl plan --dry-run --consumer billing --stream DLQ_BILLING --reason "..." \
    --where 'payload.amountCents > 50000' --ids-from incident-ids.txt

  # CI: machine-readable summary, nothing interactive
  replayctl plan --json --consumer billing --stream DLQ_BILLING --reason "..." -o job.json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			req.Actor = f.Actor()
			if runF != nil {
				return runF(opts)
			}
			return planRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	shared.BindScope(fl, opts)
	fl.StringVar(&req.Reason, "reason", "", "why the replay is needed and what changed (required, recorded)")
	fl.StringVar(&req.Ticket, "ticket", "", "incident or change ticket, recorded with the job")
	fl.StringVar(&opts.SignKey, "sign-key", "", "sign the manifest with this SSH key (a private key file, or a .pub whose key ssh-agent holds): approvals then tell the planner by key, and a policy may require it")
	fl.IntVar(&req.Max, "max", 0, "keep at most N targets, the oldest first (0: no limit)")
	fl.IntVar(&req.EffectVersion, "effect-version", 0, "effect version to replay under (default: highest known + 1)")
	fl.BoolVar(&req.WriteForbidden, "write-forbidden", false, "replay with every external call suppressed and recorded")
	fl.StringVarP(&req.OutputPath, "output", "o", "", "path of the manifest to write (required)")
	fl.BoolVar(&req.Overwrite, "force", false, "replace an existing file at -o (without it, plan refuses to overwrite a manifest)")
	fl.StringVar(&req.ToSubject, "to-subject", "", "replay every target to this subject instead of its Dlq-Original-Subject")
	fl.StringSliceVar(&req.StripHeaders, "strip-header", nil, "leave this header of the DLQ message off the replay (repeatable)")
	fl.BoolVar(&req.DryRun, "dry-run", false, "print every figure and record nothing: no manifest, no job, no audit entry")
	return cmd
}

func planRun(ctx context.Context, opts *shared.PlanOptions) error {
	req, err := shared.PrepareRequest(opts)
	if err != nil {
		return err
	}
	res, err := shared.RunPlanner(ctx, opts, req, planner.Plan)
	if err != nil {
		return err
	}
	return shared.PrintPlanResult(opts.IO, opts.JSON, req.OutputPath, res)
}
