package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

// The textfile collector reads the figures with the Prometheus text parser: what it parses must
// be what the table says.
func TestLedgerStatsOpenMetricsIsWhatATextfileCollectorReads(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	ledgertest.InsertEffects(t, pgtest.Pool(t, w.store), ledgertest.Effect{EventID: "evt-u", State: "uncertain", UpdatedAgo: 20 * time.Minute})
	w.exec(t, `insert into delivery_counts (consumer, day, deliveries, duplicate_deliveries)
values ('billing', (now() at time zone 'utc')::date, 21, 20)`)
	w.exec(t, `insert into effect_incidents (consumer, event_id, effect_version, kind, dedup_key)
select 'billing', 'evt-' || i, 1, 'payload_conflict', 'k' || i from generate_series(1, 14) i`)

	stdout, stderr, code := runCommand(t, false, "ledger stats --consumer billing --window 7d --format openmetrics "+w.flags)
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d:\n%s\n%s", code, stdout, stderr)
	}
	if !strings.HasSuffix(stdout, "# EOF\n") || !strings.Contains(stdout, "# TYPE replayctl_ledger_replay_rate gauge") {
		t.Errorf("not OpenMetrics gauges ending in # EOF:\n%s", stdout)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(stdout))
	if err != nil {
		t.Fatalf("the text parser refuses it: %v\n%s", err, stdout)
	}
	value := func(name string) float64 {
		t.Helper()
		f, ok := families[name]
		if !ok || len(f.GetMetric()) != 1 {
			t.Fatalf("%s missing or not one series:\n%s", name, stdout)
		}
		m := f.GetMetric()[0]
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["consumer"] != "billing" || labels["window"] != "7d" {
			t.Errorf("%s labels %v, want consumer billing and window 7d", name, labels)
		}
		return m.GetGauge().GetValue()
	}
	for name, want := range map[string]float64{
		"replayctl_ledger_deliveries":                 21,
		"replayctl_ledger_duplicate_deliveries":       20,
		"replayctl_ledger_replay_rate":                20.0 / 21,
		"replayctl_ledger_payload_mismatches":         14,
		"replayctl_ledger_payload_mismatches_per_day": 2,
		"replayctl_ledger_uncertain_rows":             1,
		"replayctl_ledger_replay_rate_warn":           1,
		"replayctl_ledger_payload_mismatches_warn":    0,
		"replayctl_ledger_uncertain_warn":             1,
		"replayctl_ledger_warnings":                   2,
	} {
		if got := value(name); got != want {
			t.Errorf("%s = %g, want %g", name, got, want)
		}
	}
	if age := value("replayctl_ledger_uncertain_oldest_age_seconds"); age < 1200 {
		t.Errorf("oldest uncertain age %g, want at least the row's 20 minutes", age)
	}

	for args, want := range map[string]string{
		"ledger stats --consumer billing --format yaml":               `--format "yaml": want table or openmetrics`,
		"ledger stats --consumer billing --format openmetrics --json": "--format openmetrics and --json: choose one",
	} {
		_, stderr, code := runCommand(t, false, args+" "+w.flags)
		if code != cmdutil.ExitUsage || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 with %q", args, code, stderr, want)
		}
	}
}
