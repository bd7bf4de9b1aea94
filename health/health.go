// Package health judges a consumer's ledger figures (ledger.Stats) against the thresholds that
// warn, and says for each figure over its threshold what was found and what to do: the report of
// `replayctl ledger stats`. The ledger reads the figures; the policy and its wording are here.
package health

import (
	"context"
	"fmt"
	"time"

	"github.com/replayctl/replayctl/ledger"
)

// Warning thresholds (docs/ledger.md, "Lifecycle").
const (
	// MaxReplayRate: more deliveries answered from the ledger (duplicates) than this fraction of
	// all deliveries warns.
	MaxReplayRate = 0.005
	// MaxMismatchesPerDay: this many payload conflicts a day, or more, warns.
	MaxMismatchesPerDay = 10.0
	// MaxLeaseExpiriesPerDay: this many lapsed leases a day, or more, warns.
	MaxLeaseExpiriesPerDay = 10.0
	// MaxUncertainAge: any uncertain row older than this warns.
	MaxUncertainAge = 15 * time.Minute
)

// Report is the health of one consumer's ledger over a window: each figure with its threshold.
type Report struct {
	Consumer string `json:"consumer"`
	// Window is the window as Go writes a duration ("24h0m0s"); WindowSeconds the same.
	Window        string    `json:"-"`
	WindowSeconds float64   `json:"windowSeconds"`
	Since         time.Time `json:"since"`
	Until         time.Time `json:"until"`

	Replay        ReplayStat    `json:"replay"`
	Mismatches    RateStat      `json:"payloadMismatches"`
	LeaseExpiries RateStat      `json:"leaseExpiries"`
	Uncertain     UncertainStat `json:"uncertain"`
	StuckLeases   StuckStat     `json:"stuckLeases"`
	// DeadLettersRefused counts dead letters the DLQ stream refused; any warns.
	DeadLettersRefused RateStat `json:"deadLettersRefused"`
	// Replication is the ledger's replication: whether a failover can lose acknowledged rows.
	Replication ReplicationStat `json:"replication"`
	// Warnings lists the metrics over their threshold, each with what to do; empty when none is.
	Warnings []Warning `json:"warnings"`
}

// ReplayStat is the replay rate against MaxReplayRate.
type ReplayStat struct {
	ledger.ReplayFigures
	// MaxRate is the threshold: Warn is Rate > MaxRate.
	MaxRate float64 `json:"maxRate"`
	Warn    bool    `json:"warn"`
}

// RateStat is a count of incidents a day against its threshold.
type RateStat struct {
	ledger.RateFigures
	// MaxPerDay is the threshold: Warn is PerDay >= MaxPerDay.
	MaxPerDay float64 `json:"maxPerDay"`
	Warn      bool    `json:"warn"`
}

// UncertainStat is the uncertain rows against MaxUncertainAge.
type UncertainStat struct {
	ledger.UncertainFigures
	// MaxAgeThresholdSeconds is the threshold: Warn is MaxAgeSeconds > it.
	MaxAgeThresholdSeconds float64 `json:"maxAgeThresholdSeconds"`
	Warn                   bool    `json:"warn"`
}

// StuckStat is the stuck leases; any warns.
type StuckStat struct {
	ledger.StuckFigures
	// Warn is Count > 0.
	Warn bool `json:"warn"`
}

// Warning is one metric over its threshold, said for an operator.
type Warning struct {
	// Metric is the JSON name of the metric: replay, payloadMismatches, leaseExpiries, uncertain,
	// stuckLeases.
	Metric string `json:"metric"`
	// Summary says what was found; Action what to do next.
	Summary string `json:"summary"`
	Action  string `json:"action"`
}

// Read reads opts.Consumer's figures from store and judges them. An unknown consumer matches
// ledger.ErrUnknownConsumer.
func Read(ctx context.Context, store *ledger.Store, opts ledger.StatsOptions) (*Report, error) {
	st, err := store.LedgerStats(ctx, opts)
	if err != nil {
		return nil, err
	}
	rep, err := store.Replication(ctx)
	if err != nil {
		return nil, err
	}
	r := Judge(st)
	var w *Warning
	if r.Replication, w = JudgeReplication(rep); w != nil {
		r.Warnings = append(r.Warnings, *w)
	}
	return r, nil
}

// Judge sets each figure of st against its threshold and words the warnings.
func Judge(st *ledger.Stats) *Report {
	r := &Report{Consumer: st.Consumer, Window: st.Window.String(), WindowSeconds: st.Window.Seconds(), Since: st.Since, Until: st.Until,
		Replay:        ReplayStat{ReplayFigures: st.Replay, MaxRate: MaxReplayRate, Warn: st.Replay.Rate > MaxReplayRate},
		Mismatches:    RateStat{RateFigures: st.Mismatches, MaxPerDay: MaxMismatchesPerDay, Warn: st.Mismatches.PerDay >= MaxMismatchesPerDay},
		LeaseExpiries: RateStat{RateFigures: st.LeaseExpiries, MaxPerDay: MaxLeaseExpiriesPerDay, Warn: st.LeaseExpiries.PerDay >= MaxLeaseExpiriesPerDay},
		Uncertain: UncertainStat{UncertainFigures: st.Uncertain, MaxAgeThresholdSeconds: MaxUncertainAge.Seconds(),
			Warn: st.Uncertain.Count > 0 && st.Uncertain.MaxAgeSeconds > MaxUncertainAge.Seconds()},
		StuckLeases:        StuckStat{StuckFigures: st.StuckLeases, Warn: st.StuckLeases.Count > 0},
		DeadLettersRefused: RateStat{RateFigures: st.DeadLettersRefused, MaxPerDay: 0, Warn: st.DeadLettersRefused.Count > 0},
	}
	r.Warnings = r.warnings()
	return r
}

func (st *Report) warnings() []Warning {
	w := []Warning{}
	if st.Replay.Warn {
		w = append(w, Warning{Metric: "replay",
			Summary: fmt.Sprintf("%.2f%% of the deliveries since %s were answered from the ledger as duplicates (%d of %d), above %.1f%%",
				100*st.Replay.Rate, st.Replay.Since.UTC().Format(time.DateOnly), st.Replay.Duplicates, st.Replay.Deliveries, 100*MaxReplayRate),
			Action: "the ledger is absorbing repeated deliveries: check for lost or late acks (handlers slower than the durable's AckWait, consumer restarts), " +
				"producers retrying with the same Event-Id, and replays of events that were already done; nothing was charged twice, but the cause is upstream"})
	}
	if st.Mismatches.Warn {
		w = append(w, Warning{Metric: "payloadMismatches",
			Summary: fmt.Sprintf("%d messages in the window reused an event ID with a different payload (%.1f a day, threshold %g)",
				st.Mismatches.Count, st.Mismatches.PerDay, MaxMismatchesPerDay),
			Action: "a producer reuses Event-Ids for different requests: find it from the refused messages' event IDs in effect_incidents and fix its ID scheme; refused messages were not processed"})
	}
	if st.LeaseExpiries.Warn {
		w = append(w, Warning{Metric: "leaseExpiries",
			Summary: fmt.Sprintf("%d leases lapsed in the window (%.1f a day, threshold %g)",
				st.LeaseExpiries.Count, st.LeaseExpiries.PerDay, MaxLeaseExpiriesPerDay),
			Action: "handlers crash or outlive their lease: check the consumer's restarts and handler latency, and raise its Lease if calls are slow; lapses after a call started end uncertain"})
	}
	if st.Uncertain.Warn {
		w = append(w, Warning{Metric: "uncertain",
			Summary: fmt.Sprintf("%d uncertain rows, the oldest uncertain for %s (p95 %s), over %s",
				st.Uncertain.Count, seconds(st.Uncertain.MaxAgeSeconds), seconds(st.Uncertain.P95AgeSeconds), MaxUncertainAge),
			Action: "an external write may or may not have happened for each: check the provider and reconcile them by hand; they are never retried or replayed automatically"})
	}
	if st.DeadLettersRefused.Warn {
		w = append(w, Warning{Metric: "deadLettersRefused",
			Summary: fmt.Sprintf("the DLQ stream refused %d dead letters in the window: those events were neither handled nor dead-lettered, and are redelivered until it takes them",
				st.DeadLettersRefused.Count),
			Action: "the DLQ stream is full and discards new messages: make room (raise its max_msgs or max_bytes, drain finished jobs with `replayctl drain JOB`), or set it to discard old"})
	}
	if st.StuckLeases.Warn {
		w = append(w, Warning{Metric: "stuckLeases",
			Summary: fmt.Sprintf("%d rows are processing under a lease that lapsed over %s ago and nobody took over (%d with an external call started; the oldest lapsed %s ago)",
				st.StuckLeases.Count, ledger.StuckLeaseAfter, st.StuckLeases.CallsStarted, seconds(st.StuckLeases.OldestLapsedSeconds)),
			Action: "if the consumer has been running meanwhile, their messages are not being delivered again; those with a call started may have made their external write: " +
				"`replayctl reconcile --consumer " + st.Consumer + "` asks the consumer's look-up about them and settles them as uncertain rows; " +
				"find the others with `select event_id, effect_version from effects where state = 'processing' and calls_started = 0 and lease_expires_at < now()`"})
	}
	return w
}

// seconds renders an age in whole seconds, the precision an operator reads.
func seconds(s float64) time.Duration { return time.Duration(s) * time.Second }
