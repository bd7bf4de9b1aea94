package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/replayctl/replayctl/internal/every"
	"github.com/replayctl/replayctl/ledger"
)

// Prometheus metric names (docs/ledger.md, "Metrics"). The replay rate is not a metric of its own:
// it is the ratio of the two delivery counters, a recording rule named
// idempotency_replay_rate in docs/alerts.yml, so it can be taken over any range and summed over
// instances, which a ratio computed in each process cannot.
const (
	MetricDeliveries          = "idempotency_deliveries_total"
	MetricDuplicateDeliveries = "idempotency_duplicate_deliveries_total"
	MetricPayloadMismatches   = "key_payload_mismatch_total"
	MetricLeaseExpiries       = "processing_lease_expired_total"
	MetricUncertainAge        = "uncertain_state_age_seconds"
	MetricUncertainRows       = "idempotency_uncertain_rows"
)

const (
	defaultCountsInterval = 5 * time.Second
	// finalFlushTimeout bounds the flush Run makes on its way out, after its context ended.
	finalFlushTimeout = 5 * time.Second
)

// meters counts what the SDK did with each delivery. The Prometheus collectors exist whether or
// not they are registered (Config.Metrics); the deliveries and duplicates not yet added to the
// ledger's daily counts are kept apart, so a failed flush loses nothing.
type meters struct {
	deliveries, duplicates, mismatches, lapses prometheus.Counter
	uncertainAge, uncertainRows                prometheus.Gauge

	unflushedDeliveries, unflushedDuplicates atomic.Int64
	// flushing serialises flushes, so two never add the same counts.
	flushing sync.Mutex
}

// newMeters builds the collectors, labelled consumer=name, and registers them on reg unless it
// is nil. A collector already registered under the same name and consumer is an error naming it.
func newMeters(name string, reg prometheus.Registerer) (*meters, error) {
	labels := prometheus.Labels{"consumer": name}
	counter := func(metric, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: metric, Help: help, ConstLabels: labels})
	}
	gauge := func(metric, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: metric, Help: help, ConstLabels: labels})
	}
	m := &meters{
		deliveries: counter(MetricDeliveries, "Messages the idempotency SDK handled, redeliveries included."),
		duplicates: counter(MetricDuplicateDeliveries,
			"Deliveries answered from the idempotency ledger without running the handler: the event was already done."),
		mismatches: counter(MetricPayloadMismatches,
			"Deliveries refused because their Event-Id is stored with a different payload fingerprint."),
		lapses: counter(MetricLeaseExpiries,
			"Processing leases this instance found lapsed (a handler crashed, stalled or outlived its lease)."),
		uncertainAge: gauge(MetricUncertainAge,
			"How long the consumer's oldest uncertain ledger row has been uncertain, 0 when none; read from the ledger every few seconds."),
		uncertainRows: gauge(MetricUncertainRows, "The consumer's uncertain ledger rows: external writes waiting for a look-up or a person."),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.deliveries, m.duplicates, m.mismatches, m.lapses, m.uncertainAge, m.uncertainRows} {
		if err := reg.Register(c); err != nil {
			if _, dup := errors.AsType[prometheus.AlreadyRegisteredError](err); dup {
				return nil, fmt.Errorf("%w: Metrics: the registry already holds the metrics of a consumer named %s: "+
					"one Consumer per name and registry", ErrBadConfig, name)
			}
			return nil, fmt.Errorf("%w: Metrics: register the metrics of consumer %s: %w", ErrBadConfig, name, err)
		}
	}
	return m, nil
}

// delivered counts one delivery and what Process made of it.
func (m *meters) delivered(kind OutcomeKind) {
	m.deliveries.Inc()
	m.unflushedDeliveries.Add(1)
	switch kind {
	case OutcomeDuplicate:
		m.duplicates.Inc()
		m.unflushedDuplicates.Add(1)
	case OutcomeConflict:
		m.mismatches.Inc()
	}
}

// incident counts what the SDK records in effect_incidents besides conflicts, which delivered
// counts from the outcome.
func (m *meters) incident(kind string) {
	if kind == ledger.IncidentLeaseLapsed {
		m.lapses.Inc()
	}
}

// FlushCounts adds the deliveries and duplicates counted since the last flush to the ledger's
// daily counts (one statement), and refreshes the uncertain gauges from the ledger. Run calls it
// every CountsInterval and once more on its way out; a service that calls Process itself calls
// it on a schedule of its own. On failure the counts are kept for the next flush.
func (c *Consumer) FlushCounts(ctx context.Context) error {
	m := c.meters
	m.flushing.Lock()
	defer m.flushing.Unlock()
	n := ledger.DeliveryCounts{Deliveries: m.unflushedDeliveries.Swap(0), Duplicates: m.unflushedDuplicates.Swap(0)}
	if err := c.cfg.Store.DeliveryCountsAdd(ctx, c.cfg.Name, n); err != nil {
		m.unflushedDeliveries.Add(n.Deliveries)
		m.unflushedDuplicates.Add(n.Duplicates)
		return err
	}
	u, err := c.cfg.Store.EffectsUncertainSummary(ctx, c.cfg.Name)
	if err != nil {
		return err
	}
	m.uncertainRows.Set(float64(u.Count))
	m.uncertainAge.Set(u.OldestAge.Seconds())
	return nil
}

// startCounting flushes the counts every CountsInterval until ctx ends or stop is called; stop
// waits for the loop and flushes once more, so what Run handled before it returned is counted.
func (c *Consumer) startCounting(ctx context.Context) (stop func()) {
	stopTicking := every.Interval(ctx, c.cfg.CountsInterval, func() bool {
		c.flushOrWarn(ctx)
		return true
	})
	return func() {
		stopTicking()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalFlushTimeout)
		defer cancel()
		c.flushOrWarn(ctx)
	}
}

// flushOrWarn flushes the counts; a failure is a report, not a decision, and is only logged.
func (c *Consumer) flushOrWarn(ctx context.Context) {
	if err := c.FlushCounts(ctx); err != nil {
		c.log.Warn("flushing the delivery counts failed; they are kept for the next flush", "consumer", c.cfg.Name,
			"deliveries", c.meters.unflushedDeliveries.Load(), "error", err)
	}
}
