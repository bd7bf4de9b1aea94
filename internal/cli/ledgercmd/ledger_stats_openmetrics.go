package ledgercmd

import (
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/replayctl/replayctl/health"
)

// statsGauge is one figure of ledger stats as a textfile-collector gauge.
type statsGauge struct {
	name, help string
	value      float64
}

// printStatsOpenMetrics writes st as OpenMetrics gauges labelled consumer and window (as typed),
// ending with "# EOF". They are window figures read from the ledger, not the SDK's live counters,
// hence their own prefix: a rule never mixes the two by accident.
func printStatsOpenMetrics(w io.Writer, st *health.Report, window string) error {
	warn := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	gauges := []statsGauge{
		{"replayctl_ledger_deliveries", "Deliveries the SDK handled in the window's UTC days.", float64(st.Replay.Deliveries)},
		{"replayctl_ledger_duplicate_deliveries", "Deliveries answered from the ledger as duplicates in the window's UTC days.", float64(st.Replay.Duplicates)},
		{"replayctl_ledger_replay_rate", "Duplicate deliveries over deliveries in the window's UTC days (warns above 0.005).", st.Replay.Rate},
		{"replayctl_ledger_payload_mismatches", "Payload conflicts the SDK recorded in the window.", float64(st.Mismatches.Count)},
		{"replayctl_ledger_payload_mismatches_per_day", "Payload conflicts per day over the window (warns at 10).", st.Mismatches.PerDay},
		{"replayctl_ledger_lease_expiries", "Lapsed leases the SDK recorded in the window.", float64(st.LeaseExpiries.Count)},
		{"replayctl_ledger_lease_expiries_per_day", "Lapsed leases per day over the window (warns at 10).", st.LeaseExpiries.PerDay},
		{"replayctl_ledger_uncertain_rows", "Uncertain ledger rows now.", float64(st.Uncertain.Count)},
		{"replayctl_ledger_uncertain_oldest_age_seconds", "Age of the oldest uncertain row now, 0 when none (warns above 900).", st.Uncertain.MaxAgeSeconds},
		{"replayctl_ledger_stuck_leases", "Processing rows whose lease lapsed over 15 minutes ago with nobody taking over.", float64(st.StuckLeases.Count)},
		{"replayctl_ledger_warnings", "Figures over their threshold; the table or --json says which and what to do.", float64(len(st.Warnings))},
		{"replayctl_ledger_replay_rate_warn", "1 when the replay rate is over its threshold.", warn(st.Replay.Warn)},
		{"replayctl_ledger_payload_mismatches_warn", "1 when payload conflicts are at or over 10 a day.", warn(st.Mismatches.Warn)},
		{"replayctl_ledger_uncertain_warn", "1 when an uncertain row is older than 15 minutes.", warn(st.Uncertain.Warn)},
	}
	reg := prometheus.NewPedanticRegistry()
	labels := prometheus.Labels{"consumer": st.Consumer, "window": window}
	for _, g := range gauges {
		gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: g.name, Help: g.help, ConstLabels: labels})
		gauge.Set(g.value)
		if err := reg.Register(gauge); err != nil {
			return fmt.Errorf("render %s as OpenMetrics: %w", g.name, err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		return fmt.Errorf("render the ledger stats as OpenMetrics: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeOpenMetrics))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return fmt.Errorf("write the ledger stats as OpenMetrics: %w", err)
		}
	}
	if closer, ok := enc.(expfmt.Closer); ok {
		return closer.Close()
	}
	return nil
}
