package shadow

import (
	"fmt"
	"strconv"
	"strings"
)

// judgeVerdict applies th to the totals: a pure function of figures, so each threshold is tested
// with a table (verdict_test.go) and no PostgreSQL or NATS. Each failed threshold is one
// sentence with the figures and the flag that moves it, in the order of verdictChecks.
func judgeVerdict(t Totals, th Thresholds) Verdict {
	reasons := []string{}
	for _, check := range verdictChecks {
		if reason, failed := check(t, th); failed {
			reasons = append(reasons, reason)
		}
	}
	return Verdict{Pass: len(reasons) == 0, Reasons: reasons, Thresholds: th, Loosened: loosened(t, th)}
}

// loosened names each threshold th sets looser than the default, with what it let through: a
// passing verdict judged with --max-calls-over 1 says that it accepted twice the plan's calls.
func loosened(t Totals, th Thresholds) []string {
	d := DefaultThresholds()
	out := []string{}
	for _, l := range []struct {
		flag        string
		value, dflt float64
		what        string
	}{
		{"--max-error-ratio", th.MaxErrorRatio, d.MaxErrorRatio, "shadow errors, missing and refused targets"},
		{"--max-unanswered-ratio", th.MaxUnansweredRatio, d.MaxUnansweredRatio, "timeouts and targets no responder answered"},
		{"--max-failure-ratio", th.MaxFailureRatio, d.MaxFailureRatio, "terminal business failures"},
		{"--max-changed-ratio", th.MaxChangedRatio, d.MaxChangedRatio, "results changed from the original"},
	} {
		if l.value > l.dflt {
			out = append(out, fmt.Sprintf("%s %s (default %s): up to %s of the targets may be %s",
				l.flag, strconv.FormatFloat(l.value, 'f', -1, 64), strconv.FormatFloat(l.dflt, 'f', -1, 64), percentOf(l.value), l.what))
		}
	}
	if th.MaxCallsOverExpected > d.MaxCallsOverExpected {
		s := fmt.Sprintf("--max-calls-over %s (default %s): up to %s more external calls than the plan's %d are accepted",
			strconv.FormatFloat(th.MaxCallsOverExpected, 'f', -1, 64), strconv.FormatFloat(d.MaxCallsOverExpected, 'f', -1, 64),
			percentOf(th.MaxCallsOverExpected), t.ExpectedExternalCalls)
		if t.ExpectedExternalCalls > 0 && t.ShadowExternalCalls > t.ExpectedExternalCalls {
			s += fmt.Sprintf("; this shadow made %d, %s above", t.ShadowExternalCalls,
				percentOf(float64(t.ShadowExternalCalls-t.ExpectedExternalCalls)/float64(t.ExpectedExternalCalls)))
		}
		out = append(out, s)
	}
	return out
}

func percentOf(ratio float64) string {
	return strconv.FormatFloat(ratio*100, 'f', -1, 64) + "%"
}

// A verdictCheck says whether t fails one threshold of th, and why in one sentence.
type verdictCheck func(t Totals, th Thresholds) (reason string, failed bool)

// verdictChecks are judged in this order. A new threshold is a check here, its field in
// Thresholds with its flag, and rows in verdict_test.go.
var verdictChecks = []verdictCheck{aborted, errorRatio, unansweredRatio, failureRatio, changedRatio, callsOverExpected}

func aborted(t Totals, _ Thresholds) (string, bool) { return t.AbortReason, t.Aborted }

func errorRatio(t Totals, th Thresholds) (string, bool) {
	bad := t.ShadowErrors + t.SourceMissing + t.Refused
	if !exceeds(bad, t.Targets, th.MaxErrorRatio) {
		return "", false
	}
	refusedNote := ""
	if t.Refused > 0 {
		refusedNote = fmt.Sprintf(", %s refused by NATS as over max_payload", count(t.Refused))
	}
	return fmt.Sprintf("%s of %s targets (%s) failed in shadow (%s shadow errors, %s missing from the DLQ%s), above --max-error-ratio %s",
		count(bad), count(t.Targets), percent(bad, t.Targets, 2), count(t.ShadowErrors), count(t.SourceMissing), refusedNote, number(th.MaxErrorRatio)), true
}

func unansweredRatio(t Totals, th Thresholds) (string, bool) {
	none := t.Timeouts + t.NoResponder
	if !exceeds(none, t.Targets, th.MaxUnansweredRatio) {
		return "", false
	}
	return fmt.Sprintf("%s of %s targets (%s) went unanswered (%s timeouts, %s with no responder), above --max-unanswered-ratio %s",
		count(none), count(t.Targets), percent(none, t.Targets, 2), count(t.Timeouts), count(t.NoResponder), number(th.MaxUnansweredRatio)), true
}

func failureRatio(t Totals, th Thresholds) (string, bool) {
	if !exceeds(t.Failed, t.Targets, th.MaxFailureRatio) {
		return "", false
	}
	return fmt.Sprintf("%s of %s targets (%s) end in a terminal business failure under the new version (%s of them failed before too), above --max-failure-ratio %s; "+
		"execute would count each as failed: see the failed sample items, fix the consumer or plan without them, or allow a ratio",
		count(t.Failed), count(t.Targets), percent(t.Failed, t.Targets, 2), count(t.FailedAgain), number(th.MaxFailureRatio)), true
}

func changedRatio(t Totals, th Thresholds) (string, bool) {
	compared := t.Identical + t.Changed
	if !exceeds(t.Changed, compared, th.MaxChangedRatio) {
		return "", false
	}
	return fmt.Sprintf("%s of %s targets compared with their original (%s) changed, above --max-changed-ratio %s; review the diff in the report",
		count(t.Changed), count(compared), percent(t.Changed, compared, 2), number(th.MaxChangedRatio)), true
}

// callsOverExpected compares the excess as a ratio, one rounding, so calls exactly at the limit pass.
func callsOverExpected(t Totals, th Thresholds) (string, bool) {
	over := t.ShadowExternalCalls - t.ExpectedExternalCalls
	switch {
	case t.ExpectedExternalCalls == 0 && over > 0:
		return fmt.Sprintf("shadow would make %s external calls, the plan expected none (--max-calls-over %s)",
			count(t.ShadowExternalCalls), number(th.MaxCallsOverExpected)), true
	case exceeds(over, t.ExpectedExternalCalls, th.MaxCallsOverExpected):
		return fmt.Sprintf("shadow would make %s external calls, %s above the plan's expected %s (--max-calls-over %s)",
			count(t.ShadowExternalCalls), percent(over, t.ExpectedExternalCalls, 1),
			count(t.ExpectedExternalCalls), number(th.MaxCallsOverExpected)), true
	}
	return "", false
}

// exceeds reports whether part / whole is above limit; nothing is above any limit of nothing.
func exceeds(part, whole int64, limit float64) bool {
	return whole > 0 && float64(part)/float64(whole) > limit
}

// count writes a count with thousands separators: 4,506.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func percent(part, whole int64, decimals int) string {
	return strconv.FormatFloat(float64(part)/float64(whole)*100, 'f', decimals, 64) + "%"
}

// number writes a threshold as the operator typed it: 0, 0.1, 1.
func number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
