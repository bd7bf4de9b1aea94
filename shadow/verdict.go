package shadow

import (
	"fmt"
	"strconv"
	"strings"
)

// judgeVerdict applies th to the totals; each failed threshold is one sentence with the figures
// and the flag that moves it.
func judgeVerdict(t Totals, th Thresholds) Verdict {
	var reasons []string
	fail := func(format string, args ...any) { reasons = append(reasons, fmt.Sprintf(format, args...)) }
	if t.Aborted {
		fail("%s", t.AbortReason)
	}
	if bad := t.ShadowErrors + t.SourceMissing + t.Refused; exceeds(bad, t.Targets, th.MaxErrorRatio) {
		refusedNote := ""
		if t.Refused > 0 {
			refusedNote = fmt.Sprintf(", %s refused by NATS as over max_payload", count(t.Refused))
		}
		fail("%s of %s targets (%s) failed in shadow (%s shadow errors, %s missing from the DLQ%s), above --max-error-ratio %s",
			count(bad), count(t.Targets), percent(bad, t.Targets, 2), count(t.ShadowErrors), count(t.SourceMissing), refusedNote, number(th.MaxErrorRatio))
	}
	if none := t.Timeouts + t.NoResponder; exceeds(none, t.Targets, th.MaxUnansweredRatio) {
		fail("%s of %s targets (%s) went unanswered (%s timeouts, %s with no responder), above --max-unanswered-ratio %s",
			count(none), count(t.Targets), percent(none, t.Targets, 2), count(t.Timeouts), count(t.NoResponder), number(th.MaxUnansweredRatio))
	}
	if exceeds(t.Failed, t.Targets, th.MaxFailureRatio) {
		fail("%s of %s targets (%s) end in a terminal business failure under the new version (%s of them failed before too), above --max-failure-ratio %s; "+
			"execute would count each as failed: see the failed sample items, fix the consumer or plan without them, or allow a ratio",
			count(t.Failed), count(t.Targets), percent(t.Failed, t.Targets, 2), count(t.FailedAgain), number(th.MaxFailureRatio))
	}
	if compared := t.Identical + t.Changed; exceeds(t.Changed, compared, th.MaxChangedRatio) {
		fail("%s of %s targets compared with their original (%s) changed, above --max-changed-ratio %s; review the diff in the report",
			count(t.Changed), count(compared), percent(t.Changed, compared, 2), number(th.MaxChangedRatio))
	}
	// The excess is compared as a ratio, one rounding, so calls exactly at the limit pass.
	over := t.ShadowExternalCalls - t.ExpectedExternalCalls
	switch {
	case t.ExpectedExternalCalls == 0 && over > 0:
		fail("shadow would make %s external calls, the plan expected none (--max-calls-over %s)",
			count(t.ShadowExternalCalls), number(th.MaxCallsOverExpected))
	case exceeds(over, t.ExpectedExternalCalls, th.MaxCallsOverExpected):
		fail("shadow would make %s external calls, %s above the plan's expected %s (--max-calls-over %s)",
			count(t.ShadowExternalCalls), percent(over, t.ExpectedExternalCalls, 1),
			count(t.ExpectedExternalCalls), number(th.MaxCallsOverExpected))
	}
	if reasons == nil {
		reasons = []string{}
	}
	return Verdict{Pass: len(reasons) == 0, Reasons: reasons, Thresholds: th}
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
