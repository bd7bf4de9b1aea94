package shared

import (
	"fmt"
	"strconv"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/shadow"
)

// PrintShadowReport tells a person what the shadow pass found: the totals over every target, the
// sample's fields by path (values only in the report file: they may be personal data), and the
// verdict with every reason it failed.
func PrintShadowReport(ios *iostreams.IOStreams, reportPath, htmlPath string, r *shadow.Report) error {
	out, tty := ios.Out, ios.IsStdoutTTY()
	fmt.Fprintf(out, "shadow of job %s on %s, effect version %d -> %d\n", r.JobID, r.Subject, r.EffectVersion.From, r.EffectVersion.To)
	fmt.Fprintf(out, "manifest %s\n", r.ManifestDigest)
	if r.WriteForbidden {
		fmt.Fprintln(out, "write-forbidden: execute will suppress every external call counted below")
	}
	fmt.Fprintln(out)

	t := r.Totals
	totals := cmdutil.NewTable(out, tty)
	totals.Header("TARGETS", "COUNT")
	for _, row := range [][2]string{
		{"targets", cmdutil.Count(t.Targets)},
		{"answered", cmdutil.Count(t.Answered)},
		{"identical to the original", cmdutil.Count(t.Identical)},
		{"changed from the original", cmdutil.Count(t.Changed)},
		{"no original to compare", cmdutil.Count(t.NoOriginal)},
		{"terminal business failures", cmdutil.Count(t.Failed)},
		{"  of which failed before too", cmdutil.Count(t.FailedAgain)},
		{"compared on hash only (body pruned)", cmdutil.Count(t.ComparedOnHash)},
		{"changed external call count", cmdutil.Count(t.EffectCountChanged)},
		{"shadow errors", cmdutil.Count(t.ShadowErrors)},
		{"timeouts", cmdutil.Count(t.Timeouts)},
		{"no responder", cmdutil.Count(t.NoResponder)},
		{"missing from the DLQ", cmdutil.Count(t.SourceMissing)},
		{"refused by NATS (over max_payload)", cmdutil.Count(t.Refused)},
		{"external calls in shadow", cmdutil.Count(t.ShadowExternalCalls)},
		{"  most of one target", cmdutil.Count(t.MaxCallsPerTarget)},
		{"external calls expected by the plan", cmdutil.Count(t.ExpectedExternalCalls)},
	} {
		if err := totals.Append(row[0], row[1]); err != nil {
			return err
		}
	}
	if err := totals.Render(); err != nil {
		return err
	}
	if t.Aborted {
		fmt.Fprintf(out, "the full pass stopped early: %s\n", clip.Line(t.AbortReason))
	}

	s := r.Sample
	fmt.Fprintf(out, "\nsample: %d events, seed %s, over %d failure groups\n", s.Size, s.Seed, len(s.PerReason))
	if len(r.Fields) > 0 {
		fields := cmdutil.NewTable(out, tty)
		fields.Header("FIELD", "CHANGED", "NOISE", "IGNORED")
		for _, f := range r.Fields {
			if err := fields.Append(f.Path, strconv.Itoa(f.Changed), strconv.Itoa(f.Noise), strconv.Itoa(f.Ignored)); err != nil {
				return err
			}
		}
		if err := fields.Render(); err != nil {
			return err
		}
	}
	outcomes := map[string]int{}
	baselines := map[string]int{}
	for _, it := range s.Items {
		outcomes[string(it.Outcome)]++
		baselines[string(it.Baseline)]++
	}
	fmt.Fprintf(out, "sample outcomes: %s\n", clip.Line(cmdutil.JoinCounts(outcomes)))
	fmt.Fprintf(out, "compared against: %s\n", clip.Line(cmdutil.JoinCounts(baselines)))

	fmt.Fprintln(out)
	pal := ios.Palette()
	th := r.Verdict.Thresholds
	fmt.Fprintf(out, "judged with: --max-error-ratio %s, --max-unanswered-ratio %s, --max-failure-ratio %s, --max-changed-ratio %s, --max-calls-over %s\n",
		ratioText(th.MaxErrorRatio), ratioText(th.MaxUnansweredRatio), ratioText(th.MaxFailureRatio), ratioText(th.MaxChangedRatio), ratioText(th.MaxCallsOverExpected))
	for _, l := range r.Verdict.Loosened {
		fmt.Fprintf(out, "%s %s\n", pal.Fail("LOOSENED:"), clip.Line(l))
	}
	if r.Verdict.Pass {
		fmt.Fprintf(out, "verdict: %s, recorded for %s\n", pal.Pass("PASS"), r.ManifestDigest)
	} else {
		fmt.Fprintf(out, "verdict: %s\n", pal.Fail("FAIL"))
		for _, reason := range r.Verdict.Reasons {
			fmt.Fprintf(out, "  - %s\n", clip.Line(reason))
		}
	}
	fmt.Fprintf(out, "report: %s\n", reportPath)
	if htmlPath != "" {
		fmt.Fprintf(out, "HTML report: %s\n", htmlPath)
	}
	if r.Verdict.Pass {
		fmt.Fprintf(ios.ErrOut, "next: read the report; `replayctl execute` requires a passing verdict for this manifest digest\n")
	} else {
		fmt.Fprintf(ios.ErrOut, "next: read the report; fix the consumer or re-plan, then shadow again\n")
	}
	return nil
}

func ratioText(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
