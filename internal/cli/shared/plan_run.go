package shared

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/planner"
	"github.com/replayctl/replayctl/protocol"
	"github.com/replayctl/replayctl/sshsig"
)

// PlanOptions are the inputs of replayctl plan.
type PlanOptions struct {
	IO        *iostreams.IOStreams
	Ledger    func(ctx context.Context) (*ledger.Store, error)
	JetStream func(ctx context.Context) (jetstream.JetStream, func(), error)
	Now       func() time.Time
	JSON      bool

	Request planner.Options
	Since   string
	Until   string
	// EvidenceWindow is --evidence-window as typed; the run parses it.
	EvidenceWindow string
	// SignKey is --sign-key: an SSH key that signs the manifest, so approvals tell the planner by key.
	SignKey string
	// IDsFrom and ExcludeIDsFrom are --ids-from and --exclude-ids-from: a file, or - for stdin.
	IDsFrom, ExcludeIDsFrom string
}

// BindScope binds the flags that say which messages a plan scans and picks (plan and inspect
// share them) to opts.
func BindScope(fl *pflag.FlagSet, opts *PlanOptions) {
	req := &opts.Request
	fl.StringVar(&req.Consumer, "consumer", "", "consumer whose ledger is joined (required)")
	fl.BoolVar(&req.NewConsumer, "new-consumer", false, "allow a consumer the ledger has never seen (a first replay); without it an unknown --consumer is refused as a typo")
	fl.StringVar(&req.Stream, "stream", "", "DLQ stream to scan, or with --backfill the stream of original messages (required)")
	fl.BoolVar(&req.Backfill, "backfill", false, "re-process events completed under an older version, from a retained stream of original messages")
	fl.StringVar(&req.SubjectFilter, "subject", "", "only messages on this subject (wildcards allowed)")
	fl.StringVar(&opts.Since, "since", "", "only messages stored at or after this time")
	fl.StringVar(&opts.Until, "until", "", "only messages stored at or before this time")
	fl.StringVar(&req.FailureMatch, "failure-match", "", "only messages whose failure reason matches this regular expression")
	fl.StringVar(&opts.EvidenceWindow, "evidence-window", "",
		"override the consumer's EvidenceRetention, which its SDK registers in the ledger (replayctl keys policy; default "+cmdutil.SpanString(planner.DefaultEvidenceWindow)+
			" when none is registered): an event with no ledger row whose message is older is excluded as evidenceExpired")
	fl.BoolVar(&req.NoLookup, "no-lookup", false, "do not ask the consumer's look-up about events whose evidence expired: keep them all out as evidenceExpired")
	fl.StringVar(&opts.IDsFrom, "ids-from", "", "only these event IDs: a file with one a line, or - for stdin")
	fl.StringVar(&opts.ExcludeIDsFrom, "exclude-ids-from", "", "leave these event IDs out: a file with one a line, or - for stdin")
	fl.StringVar(&req.FailureGroup, "failure-group", "", "only messages whose failure reason is in this group (as replayctl inspect shows it)")
	fl.StringVar(&req.Where, "where", "", "only messages for which this CEL expression over payload and headers is true")
	fl.BoolVar(&req.IncludeFailedReplays, "include-failed-replays", false, "take in events whose replays by this tool failed and were dead-lettered again (the loop guard keeps them out)")
	fl.IntVar(&req.FailedReplayLimit, "failed-replay-limit", planner.DefaultFailedReplayLimit, "the loop guard keeps out an event whose replays failed this many times")
	fl.StringVar(&req.Headers.EventID, "header-event-id", dlq.DefaultHeaders.EventID, "DLQ header carrying the event ID")
	fl.StringVar(&req.Headers.Reason, "header-reason", dlq.DefaultHeaders.Reason, "DLQ header carrying the failure reason")
	fl.StringVar(&req.Headers.OriginalSubject, "header-original-subject", dlq.DefaultHeaders.OriginalSubject, "DLQ header carrying the original subject")
	fl.StringVar(&req.Headers.Attempts, "header-attempts", dlq.DefaultHeaders.Attempts, "DLQ header carrying the delivery attempts (recorded)")
	fl.StringVar(&req.Headers.FailedAt, "header-failed-at", dlq.DefaultHeaders.FailedAt, "DLQ header carrying the failure time (recorded)")
}

// RunPlanner checks req, opens the ledger and NATS, and runs a scan of the planner (plan, or
// inspect) with its progress shown; the progress ends before the result is printed.
func RunPlanner[T any](ctx context.Context, opts *PlanOptions, req planner.Options,
	run func(context.Context, jetstream.JetStream, planner.Ledger, planner.Options) (T, error)) (T, error) {
	var none T
	if err := req.Normalise(); err != nil {
		return none, err
	}
	var finish func()
	req.Progress, req.Stage, finish = cmdutil.StepProgress(opts.IO, "scanning DLQ", "messages")
	defer finish()
	store, err := opts.Ledger(ctx)
	if err != nil {
		return none, err
	}
	js, closeNATS, err := opts.JetStream(ctx)
	if err != nil {
		return none, err
	}
	defer closeNATS()
	return run(ctx, js, store, req)
}

// PrepareRequest turns the flags as typed into the planner's request: times and spans parsed, ID
// files read. The planner's Normalise checks the rest.
func PrepareRequest(opts *PlanOptions) (planner.Options, error) {
	req := opts.Request
	req.Now = opts.Now()
	var err error
	if req.Since, err = cmdutil.ParseTimeFlag("since", opts.Since, req.Now); err != nil {
		return req, err
	}
	if req.Until, err = cmdutil.ParseTimeFlag("until", opts.Until, req.Now); err != nil {
		return req, err
	}
	if opts.SignKey != "" {
		if req.Signer, err = sshsig.LoadSigner(opts.SignKey); err != nil {
			return req, cmdutil.UsageErrorf("--sign-key: %v", err)
		}
	}
	if opts.EvidenceWindow != "" {
		if req.EvidenceWindow, err = cmdutil.ParseSpan("evidence-window", opts.EvidenceWindow); err != nil {
			return req, err
		}
	}
	if opts.IDsFrom == "-" && opts.ExcludeIDsFrom == "-" {
		return req, cmdutil.UsageErrorf("--ids-from - and --exclude-ids-from - both read stdin, which holds one list: give one of them a file")
	}
	if req.IDs, err = readIDs(opts.IO, "ids-from", opts.IDsFrom); err != nil {
		return req, err
	}
	if req.ExcludeIDs, err = readIDs(opts.IO, "exclude-ids-from", opts.ExcludeIDsFrom); err != nil {
		return req, err
	}
	req.IDsFrom, req.ExcludeIDsFrom = opts.IDsFrom, opts.ExcludeIDsFrom
	return req, nil
}

// PrintPlanResult reports a recorded plan: the manifest summary (or a JSON document), then the
// warnings on stderr, where a person looks and a CI parser does not.
func PrintPlanResult(io *iostreams.IOStreams, asJSON bool, path string, res *planner.Result) error {
	m := res.Manifest
	warnings := res.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	if asJSON {
		// Only the largest reasons are printed, in stats as in the manifest and in order beside
		// them with what was left out; the manifest keeps every reason.
		reasons := cmdutil.TopReasons(m.Stats.FailureReasons, cmdutil.ShownReasons)
		strata, _ := dlq.Strata(m)
		groups := cmdutil.TopReasons(strata, cmdutil.ShownReasons)
		stats := m.Stats
		stats.FailureReasons = make(map[string]int64, len(reasons.Top))
		for _, r := range reasons.Top {
			stats.FailureReasons[r.Reason] = r.Targets
		}
		return cmdutil.PrintJSON(io.Out, "Plan", struct {
			JobID                 string                   `json:"jobId"`
			Manifest              string                   `json:"manifestPath"`
			Digest                string                   `json:"manifestDigest"`
			Consumer              string                   `json:"consumer"`
			EffectVersion         manifest.EffectVersion   `json:"effectVersion"`
			WriteForbidden        bool                     `json:"writeForbidden"`
			Stats                 manifest.Stats           `json:"stats"`
			FailureReasonSummary  cmdutil.ReasonTop        `json:"failureReasonSummary"`
			FailureGroupSummary   cmdutil.ReasonTop        `json:"failureGroupSummary"`
			ExpectedExternalCalls int64                    `json:"expectedExternalCalls"`
			ExternalCallsEstimate manifest.CallsEstimate   `json:"externalCallsEstimate"`
			EvidenceLookup        *manifest.EvidenceLookup `json:"evidenceLookup,omitempty"`
			DedupWindow           *protocol.DedupWindow    `json:"dedupWindow,omitempty"`
			Selection             *manifest.Selection      `json:"selection,omitempty"`
			ToSubject             string                   `json:"toSubject,omitempty"`
			DryRun                bool                     `json:"dryRun"`
			Warnings              []string                 `json:"warnings"`
		}{m.ID, manifestPath(res, path), m.Digest, m.Consumer, m.EffectVersion, m.WriteForbidden, stats,
			reasons, groups, m.ExpectedExternalCalls, m.ExternalCallsEstimate, m.EvidenceLookup, res.DedupWindow,
			m.Source.Selection, m.Source.ToSubject, res.DryRun, warnings})
	}
	if err := PrintSummary(io.Out, io.IsStdoutTTY(), m); err != nil {
		return err
	}
	if res.DryRun {
		fmt.Fprintf(io.Out, "\nDRY RUN: job %s would have %d targets; nothing was recorded and no manifest was written\n", m.ID, m.Stats.Targets)
		for _, w := range warnings {
			cmdutil.PrintWarning(io, w)
		}
		fmt.Fprintln(io.ErrOut, "next: run the same plan without --dry-run, with -o FILE, to record the job")
		return nil
	}
	fmt.Fprintf(io.Out, "\nplanned job %s: %d targets, manifest %s (%s)\n", m.ID, m.Stats.Targets, path, m.Digest)
	for _, w := range warnings {
		cmdutil.PrintWarning(io, w)
	}
	fmt.Fprintf(io.ErrOut, "next: review with `replayctl show %s` and `replayctl validate --ledger %s`\n", path, path)
	return nil
}
