package shadow

import (
	"slices"
	"strings"
	"testing"
)

func TestVerdictSpellsOutEveryFailedThreshold(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 4506: "4,506", 1234567: "1,234,567"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}

// Each threshold on figures alone: at the threshold the verdict passes, one target more fails it
// with that threshold's sentence only.
func TestEachThresholdFailsJustAboveIt(t *testing.T) {
	t.Parallel()
	th := Thresholds{MaxErrorRatio: 0.01, MaxUnansweredRatio: 0.01, MaxFailureRatio: 0.01, MaxChangedRatio: 0.5, MaxCallsOverExpected: 0.1}
	// 200 targets, all identical, 100 calls as planned: a pass with every threshold.
	base := Totals{Targets: 200, Answered: 200, Identical: 200, ShadowExternalCalls: 100, ExpectedExternalCalls: 100}
	for _, c := range []struct {
		name   string
		edit   func(*Totals)
		reason string // "" for a pass
	}{
		{"every figure within its threshold", func(*Totals) {}, ""},
		{"aborted", func(t *Totals) { t.Aborted, t.AbortReason = true, "the full pass stopped early" }, "the full pass stopped early"},
		{"errors at the ratio", func(t *Totals) { t.ShadowErrors = 2 }, ""},
		{"errors above the ratio", func(t *Totals) { t.ShadowErrors, t.SourceMissing = 2, 1 },
			"3 of 200 targets (1.50%) failed in shadow (2 shadow errors, 1 missing from the DLQ), above --max-error-ratio 0.01"},
		{"refused counts as an error", func(t *Totals) { t.Refused = 3 },
			"3 of 200 targets (1.50%) failed in shadow (0 shadow errors, 0 missing from the DLQ, 3 refused by NATS as over max_payload), above --max-error-ratio 0.01"},
		{"unanswered at the ratio", func(t *Totals) { t.Timeouts, t.NoResponder = 1, 1 }, ""},
		{"unanswered above the ratio", func(t *Totals) { t.Timeouts, t.NoResponder = 2, 1 },
			"3 of 200 targets (1.50%) went unanswered (2 timeouts, 1 with no responder), above --max-unanswered-ratio 0.01"},
		{"business failures at the ratio", func(t *Totals) { t.Failed = 2 }, ""},
		{"business failures above the ratio", func(t *Totals) { t.Failed, t.FailedAgain = 3, 1 },
			"3 of 200 targets (1.50%) end in a terminal business failure under the new version (1 of them failed before too), above --max-failure-ratio 0.01; " +
				"execute would count each as failed: see the failed sample items, fix the consumer or plan without them, or allow a ratio"},
		{"changed at the ratio", func(t *Totals) { t.Identical, t.Changed = 100, 100 }, ""},
		{"changed above the ratio", func(t *Totals) { t.Identical, t.Changed = 99, 101 },
			"101 of 200 targets compared with their original (50.50%) changed, above --max-changed-ratio 0.5; review the diff in the report"},
		{"nothing compared, nothing changed", func(t *Totals) { t.Identical, t.NoOriginal = 0, 200 }, ""},
		{"calls at the limit", func(t *Totals) { t.ShadowExternalCalls = 110 }, ""},
		{"calls above the limit", func(t *Totals) { t.ShadowExternalCalls = 111 },
			"shadow would make 111 external calls, 11.0% above the plan's expected 100 (--max-calls-over 0.1)"},
		{"calls where none were expected", func(t *Totals) { t.ExpectedExternalCalls, t.ShadowExternalCalls = 0, 1 },
			"shadow would make 1 external calls, the plan expected none (--max-calls-over 0.1)"},
		{"no calls where none were expected", func(t *Totals) { t.ExpectedExternalCalls, t.ShadowExternalCalls = 0, 0 }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			totals := base
			c.edit(&totals)
			v := judgeVerdict(totals, th)
			want := []string{}
			if c.reason != "" {
				want = []string{c.reason}
			}
			if v.Pass != (c.reason == "") || !slices.Equal(v.Reasons, want) || v.Thresholds != th {
				t.Fatalf("verdict %+v\nwant reasons %q", v, want)
			}
		})
	}
}

// A verdict says loudly which thresholds a flag loosened, with what it let through.
func TestAVerdictNamesEveryLoosenedThreshold(t *testing.T) {
	t.Parallel()
	th := DefaultThresholds()
	th.MaxCallsOverExpected, th.MaxErrorRatio = 1, 0.05
	v := judgeVerdict(Totals{Targets: 20, Answered: 20, ExpectedExternalCalls: 20, ShadowExternalCalls: 40}, th)
	if !v.Pass || len(v.Loosened) != 2 || !strings.Contains(v.Loosened[0], "--max-error-ratio 0.05 (default 0)") ||
		!strings.Contains(v.Loosened[1], "--max-calls-over 1 (default 0.1)") || !strings.Contains(v.Loosened[1], "this shadow made 40, 100% above") {
		t.Fatalf("verdict %+v", v)
	}
	if v := judgeVerdict(Totals{Targets: 1, Answered: 1}, DefaultThresholds()); len(v.Loosened) != 0 {
		t.Fatalf("default thresholds loosened: %v", v.Loosened)
	}
}
