package health_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/health"
	"github.com/replayctl/replayctl/ledger"
)

// Each threshold at and just past its edge, without PostgreSQL: the figures are the ledger's, the
// judgement is Judge's alone.
func TestJudgeWarnsPastEachThreshold(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stats ledger.Stats
		warn  []string
	}{
		{"quiet", ledger.Stats{}, nil},
		{"replay rate at 0.5%", ledger.Stats{Replay: ledger.ReplayFigures{Deliveries: 1000, Duplicates: 5, Rate: 0.005}}, nil},
		{"replay rate above 0.5%", ledger.Stats{Replay: ledger.ReplayFigures{Deliveries: 1000, Duplicates: 6, Rate: 0.006}}, []string{"replay"}},
		{"9.9 mismatches a day", ledger.Stats{Mismatches: ledger.RateFigures{Count: 99, PerDay: 9.9}}, nil},
		{"10 mismatches a day", ledger.Stats{Mismatches: ledger.RateFigures{Count: 10, PerDay: 10}}, []string{"payloadMismatches"}},
		{"10 lease expiries a day", ledger.Stats{LeaseExpiries: ledger.RateFigures{Count: 10, PerDay: 10}}, []string{"leaseExpiries"}},
		{"uncertain for 15 minutes", ledger.Stats{Uncertain: ledger.UncertainFigures{Count: 1, MaxAgeSeconds: 900}}, nil},
		{"uncertain for 15 minutes and a second", ledger.Stats{Uncertain: ledger.UncertainFigures{Count: 1, MaxAgeSeconds: 901}}, []string{"uncertain"}},
		{"one stuck lease", ledger.Stats{StuckLeases: ledger.StuckFigures{Count: 1, CallsStarted: 1}}, []string{"stuckLeases"}},
		{"everything", ledger.Stats{Replay: ledger.ReplayFigures{Rate: 0.5}, Mismatches: ledger.RateFigures{PerDay: 11},
			LeaseExpiries: ledger.RateFigures{PerDay: 12}, Uncertain: ledger.UncertainFigures{Count: 2, MaxAgeSeconds: 3600},
			StuckLeases: ledger.StuckFigures{Count: 3}},
			[]string{"replay", "payloadMismatches", "leaseExpiries", "uncertain", "stuckLeases"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.stats
			st.Consumer, st.Window = "billing", 24*time.Hour
			r := health.Judge(&st)
			var got []string
			for _, w := range r.Warnings {
				if w.Summary == "" || w.Action == "" {
					t.Errorf("warning %+v does not say what was found and what to do", w)
				}
				got = append(got, w.Metric)
			}
			if !slices.Equal(got, tc.warn) {
				t.Errorf("warnings %v, want %v", got, tc.warn)
			}
			flags := map[string]bool{"replay": r.Replay.Warn, "payloadMismatches": r.Mismatches.Warn, "leaseExpiries": r.LeaseExpiries.Warn,
				"uncertain": r.Uncertain.Warn, "stuckLeases": r.StuckLeases.Warn}
			for metric, warn := range flags {
				if warn != slices.Contains(tc.warn, metric) {
					t.Errorf("%s warn = %t, want %t", metric, warn, !warn)
				}
			}
			if r.Replay.MaxRate != health.MaxReplayRate || r.Uncertain.MaxAgeThresholdSeconds != 900 || r.Window != "24h0m0s" || r.WindowSeconds != 86400 {
				t.Errorf("thresholds and window not reported: %+v", r)
			}
			for _, w := range r.Warnings {
				if w.Metric == "stuckLeases" && !strings.Contains(w.Action, "replayctl reconcile --consumer billing") {
					t.Errorf("the stuck leases warning does not say what to run: %s", w.Action)
				}
			}
		})
	}
}
