package shadow

import (
	"slices"
	"testing"
)

func TestVerdictSpellsOutEveryFailedThreshold(t *testing.T) {
	totals := Totals{
		Targets: 4506, Identical: 4000, Changed: 400, ShadowErrors: 10, SourceMissing: 2, Timeouts: 3, NoResponder: 1,
		ShadowExternalCalls: 9012, ExpectedExternalCalls: 7510, Aborted: true, AbortReason: "the full pass stopped early",
	}
	v := judgeVerdict(totals, Thresholds{MaxErrorRatio: 0, MaxUnansweredRatio: 0, MaxChangedRatio: 0.05, MaxCallsOverExpected: 0.10})
	want := []string{
		"the full pass stopped early",
		"12 of 4,506 targets (0.27%) failed in shadow (10 shadow errors, 2 missing from the DLQ), above --max-error-ratio 0",
		"4 of 4,506 targets (0.09%) went unanswered (3 timeouts, 1 with no responder), above --max-unanswered-ratio 0",
		"400 of 4,400 targets compared with their original (9.09%) changed, above --max-changed-ratio 0.05; review the diff in the report",
		"shadow would make 9,012 external calls, 20.0% above the plan's expected 7,510 (--max-calls-over 0.1)",
	}
	if v.Pass || !slices.Equal(v.Reasons, want) {
		t.Fatalf("verdict %+v\nwant reasons %q", v, want)
	}

	loose := Thresholds{MaxErrorRatio: 0.01, MaxUnansweredRatio: 0.001, MaxChangedRatio: 0.1, MaxCallsOverExpected: 0.2}
	totals.Aborted = false
	if v := judgeVerdict(totals, loose); !v.Pass || len(v.Reasons) != 0 || v.Thresholds != loose {
		t.Fatalf("verdict %+v: every figure is at or under its threshold, want a pass", v)
	}
	if v := judgeVerdict(Totals{ShadowExternalCalls: 3}, DefaultThresholds()); v.Pass ||
		!slices.Equal(v.Reasons, []string{"shadow would make 3 external calls, the plan expected none (--max-calls-over 0.1)"}) {
		t.Fatalf("calls where none were expected: %+v", v)
	}
}

func TestCountUsesThousandsSeparators(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 4506: "4,506", 1234567: "1,234,567"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}
