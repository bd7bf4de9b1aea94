package htmlreport_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/shadow"
	"github.com/replayctl/replayctl/shadow/htmlreport"
)

func testReport() *shadow.Report {
	return &shadow.Report{
		JobID:  "job-1",
		Totals: shadow.Totals{Targets: 10, Identical: 7, Changed: 2, Failed: 1, ShadowExternalCalls: 12},
		Sample: shadow.Sample{Size: 3, PerReason: map[string]int{"timeout": 2, "card_declined": 1}, Items: []shadow.SampleItem{
			{EventID: "e1", FailureReason: "timeout", Outcome: shadow.OutcomeChanged,
				Changed: []shadow.FieldChange{{Path: "note", Original: json.RawMessage(`"ok"`), Shadow: json.RawMessage(`"<script>alert(1)</script>"`)}},
				Noise:   []string{"processedAt"}, Ignored: []string{"traceId"}},
			{EventID: "e2", FailureReason: "timeout", Outcome: shadow.OutcomeIdentical},
			{EventID: "e3", FailureReason: "card_declined", Outcome: shadow.OutcomeChanged,
				Changed: []shadow.FieldChange{{Path: "note", Original: json.RawMessage(`1`)}}},
		}},
		Fields:  []shadow.FieldSummary{{Path: "note", Changed: 2}, {Path: "processedAt", Noise: 1}},
		Verdict: shadow.Verdict{Pass: false, Reasons: []string{"2 of 9 changed & more"}},
	}
}

func render(t *testing.T, r *shadow.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := htmlreport.Write(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteEscapesPayloadValues(t *testing.T) {
	out := render(t, testReport())
	if strings.Contains(out, "<script>") {
		t.Fatalf("payload <script> reached the page unescaped:\n%s", out)
	}
	if !strings.Contains(out, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("escaped payload value missing:\n%s", out)
	}
	if !strings.Contains(out, "2 of 9 changed &amp; more") {
		t.Fatal("verdict reason missing or unescaped")
	}
}

// The page must load nothing: it is opened offline and attached to tickets.
func TestWriteIsSelfContained(t *testing.T) {
	out := render(t, testReport())
	for _, bad := range []string{"<script", "<link", "src=", "href=", "@import", "url("} {
		if strings.Contains(out, bad) {
			t.Errorf("page references something external: %q", bad)
		}
	}
	if !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, "<style>") {
		t.Error("not a standalone HTML page with its own CSS")
	}
}

func TestWriteContent(t *testing.T) {
	out := render(t, testReport())
	for _, want := range []string{
		`data-total="sampled">3<`, `data-total="matched">7<`, `data-total="changed">2<`,
		`data-total="failed">1<`, `data-total="calls">12<`,
		`<span class="fail">FAIL</span>`,
		"<td>card_declined</td><td class=\"num\">1</td>", "<td>timeout</td><td class=\"num\">2</td>",
		// note changed in 2 of 3 sampled events: 66%.
		`style="width:66%"`,
		`<tr class="noise"><td><code>processedAt</code>`, `<tr class="ignored"><td><code>traceId</code>`,
		"event <code>e1</code>", "event <code>e3</code>", "<td class=\"val\">—</td>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(out, "event <code>e2</code>") {
		t.Error("an identical event got a diff table")
	}
	// Only changed fields have bars: processedAt is noise only.
	if strings.Count(out, `class="bar"`) != 1 {
		t.Errorf("want 1 histogram bar, got %d", strings.Count(out, `class="bar"`))
	}
}

func TestWritePass(t *testing.T) {
	r := testReport()
	r.Verdict = shadow.Verdict{Pass: true, Reasons: []string{}}
	if out := render(t, r); !strings.Contains(out, `<span class="pass">PASS</span>`) || strings.Contains(out, `id="reasons"`) {
		t.Error("pass verdict not rendered as PASS without reasons")
	}
}

// Identical diffs are one row with their count, an identical event with only noise is counted
// apart (never a "changed" card), and the page says whose plan it is and why.
func TestWriteGroupsChangesAndKeepsOneMeaningOfChanged(t *testing.T) {
	r := testReport()
	r.Reason, r.Ticket, r.PlannedBy = "fee rounding fixed", "INC-9", "alice"
	r.Sample.Items = append(r.Sample.Items,
		shadow.SampleItem{EventID: "e4", Outcome: shadow.OutcomeChanged, Changed: []shadow.FieldChange{{Path: "feeCents", Original: json.RawMessage(`35`), Shadow: json.RawMessage(`36`)}}},
		shadow.SampleItem{EventID: "e5", Outcome: shadow.OutcomeChanged, Changed: []shadow.FieldChange{{Path: "feeCents", Original: json.RawMessage(`35`), Shadow: json.RawMessage(`36`)}}},
		shadow.SampleItem{EventID: "e6", Outcome: shadow.OutcomeIdentical, Noise: []string{"processedAt"}})
	out := render(t, r)
	for _, want := range []string{
		`<td><code>feeCents</code></td><td class="val">35</td><td class="val">36</td><td class="num">2</td>`,
		`1 identical events differ only in noise`, "fee rounding fixed", "<code>INC-9</code>", "<code>alice</code>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(out, "event <code>e6</code>") {
		t.Error("an identical event with noise got a changed card")
	}
}

func TestWriteShowsTheSelection(t *testing.T) {
	r := testReport()
	r.Selection = &manifest.Selection{Where: "payload.amountCents > 50000", FailureGroup: "timeout after <n> ms"}
	r.ToSubject = "billing.charge.canary"
	out := render(t, r)
	for _, want := range []string{"--where <code>payload.amountCents &gt; 50000</code>", "--failure-group <code>timeout after &lt;n&gt; ms</code>", "<code>billing.charge.canary</code>"} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
