package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/health"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

// scrape reads url as Prometheus does and returns each metric of consumer billing by name.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: not the Prometheus text format: %v", url, err)
	}
	got := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			if !hasLabel(m, "consumer", consumerName) {
				continue
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				got[name] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				got[name] = m.GetGauge().GetValue()
			}
		}
	}
	return got
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// A scripted run against a running consumer, scraped over HTTP: every figure is the hand count.
// The replay rate is the ratio of the delivery counters (the recording rule of docs/alerts.yml),
// and the same figures reach the ledger's daily counts that `replayctl ledger stats` reads.
func TestMetricsMatchAHandCountedRunScrapedOverHTTP(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	c := e.newConsumer(func(cfg *consumer.Config) {
		cfg.Metrics, cfg.CountsInterval = reg, 20*time.Millisecond
	})
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	e.runUntilCleanup(c)
	waitScraped := func(what string, cond func(map[string]float64) bool) map[string]float64 {
		t.Helper()
		var m map[string]float64
		pgtest.WaitFor(t, 10*time.Second, func() (bool, error) {
			m = scrape(t, srv.URL)
			return cond(m), nil
		})
		if !cond(m) {
			t.Fatalf("%s: scraped %v", what, m)
		}
		return m
	}

	// 1 original and 20 duplicate deliveries of one order.
	for range 21 {
		e.publish("evt-1", orderJSON("acct-1", 100), nil)
	}
	m := waitScraped("21 deliveries", func(m map[string]float64) bool { return m[consumer.MetricDeliveries] == 21 })
	if m[consumer.MetricDuplicateDeliveries] != 20 || e.p.calls.Load() != 1 {
		t.Fatalf("after 1 original and 20 duplicates: %v, %d provider calls", m, e.p.calls.Load())
	}
	if rate := m[consumer.MetricDuplicateDeliveries] / m[consumer.MetricDeliveries]; math.Abs(rate-20.0/21) > 1e-12 {
		t.Errorf("replay rate %g, want 20/21", rate)
	}
	if m[consumer.MetricPayloadMismatches] != 0 || m[consumer.MetricLeaseExpiries] != 0 || m[consumer.MetricUncertainRows] != 0 {
		t.Errorf("nothing else happened, but scraped %v", m)
	}

	// The same event ID with another payload: a conflict, refused.
	e.publish("evt-1", orderJSON("acct-1", 999), nil)
	// A handler that died before its call: the next delivery finds the lease lapsed and takes over.
	payload := orderJSON("acct-2", 200)
	ledgertest.InsertEffects(t, e.db, ledgertest.Effect{EventID: "evt-2", State: "processing", RequestHash: fingerprint.Payload([]byte(payload)),
		LeaseOwner: "instance-dead", LeaseLapsedAgo: time.Minute, Attempts: 1})
	e.publish("evt-2", payload, nil)
	// A charge whose outcome nobody knows, uncertain for 20 minutes.
	ledgertest.InsertEffects(t, e.db, ledgertest.Effect{EventID: "evt-3", State: "uncertain", CallsStarted: 1, UpdatedAgo: 20 * time.Minute})

	m = waitScraped("a conflict, a lapse and an uncertain row", func(m map[string]float64) bool {
		return m[consumer.MetricDeliveries] == 23 && m[consumer.MetricLeaseExpiries] == 1 && m[consumer.MetricUncertainRows] == 1
	})
	if m[consumer.MetricDuplicateDeliveries] != 20 || m[consumer.MetricPayloadMismatches] != 1 {
		t.Errorf("duplicates %g and mismatches %g, want 20 and 1", m[consumer.MetricDuplicateDeliveries], m[consumer.MetricPayloadMismatches])
	}
	if age := m[consumer.MetricUncertainAge]; age < 20*60 || age > 21*60 {
		t.Errorf("%s = %g, want the uncertain row's 20 minutes", consumer.MetricUncertainAge, age)
	}

	// The daily counts, from any terminal.
	pgtest.WaitFor(t, 10*time.Second, func() (bool, error) {
		return e.count(`select coalesce(sum(deliveries), 0) from delivery_counts where consumer = 'billing'`) == 23, nil
	})
	st, err := health.Read(e.ctx, e.store, ledger.StatsOptions{Consumer: consumerName, Window: 7 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if st.Replay.Deliveries != 23 || st.Replay.Duplicates != 20 || !st.Replay.Warn || st.Mismatches.Count != 1 || st.LeaseExpiries.Count != 1 {
		t.Errorf("ledger stats %+v, mismatches %+v, lapses %+v; want 20 of 23 deliveries, 1 conflict, 1 lapse",
			st.Replay, st.Mismatches, st.LeaseExpiries)
	}
}

// Deliveries handled before Run returns are in the ledger when it has returned: the last
// interval is flushed on the way out.
func TestRunFlushesTheLastCountsWhenItStops(t *testing.T) {
	e := newEnv(t)
	c := e.newConsumer(func(cfg *consumer.Config) { cfg.CountsInterval = time.Hour })
	for i := range 3 {
		e.publish(fmt.Sprintf("evt-%d", i), orderJSON("acct", 100+i), nil)
	}
	e.publish("evt-0", orderJSON("acct", 100), nil)
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	e.settled(e.durable(c))
	if n := e.count(`select count(*) from delivery_counts`); n != 0 {
		t.Fatalf("%d daily counts rows before the hour's flush", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := e.count(`select deliveries * 100 + duplicate_deliveries from delivery_counts where consumer = 'billing'`); n != 401 {
		t.Fatalf("daily counts %d, want 4 deliveries and 1 duplicate (401)", n)
	}
}

func TestMetricsOfTwoConsumersWithOneNameOnOneRegistryAreRefused(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	e.newConsumer(func(cfg *consumer.Config) { cfg.Metrics = reg })
	cfg := e.newConsumer(nil).Config()
	cfg.Metrics = reg
	_, err := consumer.New(cfg)
	if !errors.Is(err, consumer.ErrBadConfig) {
		t.Fatalf("a second consumer billing on the registry: %v, want ErrBadConfig", err)
	}
	if _, err := consumer.New(func() consumer.Config { c := cfg; c.Name = "shipping"; return c }()); err != nil {
		t.Fatalf("another consumer on the same registry: %v", err)
	}
}

// runUntilCleanup runs c until the test ends, and fails the test if Run returned an error.
func (e *env) runUntilCleanup(c *consumer.Consumer) {
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("Run: %v", err)
		}
	})
}
