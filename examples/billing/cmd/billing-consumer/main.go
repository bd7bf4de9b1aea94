// Command billing-consumer runs the example billing consumer as a service: it answers shadow
// requests on replay.shadow.billing and, unless -shadow-only, consumes its stream with the SDK's
// ledger rules and answers `replayctl reconcile` look-ups on replay.reconcile.billing from the
// provider's charges. With -metrics-addr it serves the SDK's Prometheus metrics on /metrics there
// (docs/ledger.md, "Metrics"; docs/alerts.yml). Its payment provider is a fake that keeps its
// charges, and the service its orders, in the ledger's database (tables billing_orders and
// billing_provider_charges), so nothing leaves the machine and every instance's look-up answers
// alike; the provider's call count (this instance's) is printed when it stops. It is for trying replayctl shadow by hand and
// for measuring replayctl against a responder in another process (docs/benchmarks.md).
//
//	go run ./examples/billing/cmd/billing-consumer -shadow-only -live-version 1
//	go run ./examples/billing/cmd/billing-consumer -create-stream -metrics-addr 127.0.0.1:9464
//	go run ./examples/billing/cmd/billing-consumer -fail-charges-until 20s -retry-backoff 100ms
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/natsconn"
	"github.com/replayctl/replayctl/internal/tracing"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/seal"
)

// options are the command's flags.
type options struct {
	dbURL, stream, dlqSubject string
	// recordsURL is where the orders and the provider's charges are kept; empty: the ledger's
	// database. A fault soak keeps them apart, so a failover of the ledger cannot take the
	// provider's own log with it.
	recordsURL string
	// nats are the connection flags replayctl takes too (internal/natsconn).
	nats                     natsconn.Flags
	liveVersion              int
	shadowOnly, createStream bool
	concurrency, handlers    int
	// metricsAddr is where /metrics is served; empty serves nothing.
	metricsAddr string
	// resultKeyring is a keyring file sealing the stored receipts; empty stores them as they are.
	resultKeyring string
	// reconcileAfter and reconcileInterval tune the SDK's reconcile worker (0: its defaults).
	reconcileAfter, reconcileInterval time.Duration
	// failChargesUntil is how long after start every charge fails (a live outage); retryBackoff
	// is the SDK's first nak delay, shortened so an outage dead-letters in seconds.
	failChargesUntil, retryBackoff time.Duration
	// lease is how long a claimed event stays this instance's without a heartbeat: after a crash,
	// its events wait that long before another instance may take them over.
	lease time.Duration
	// logLevel is the SDK's log level: warn by default (what needs a person), info for every
	// message processed.
	logLevel string
}

func main() {
	var o options
	// The environment is read when the service starts, not shown as the flag's default: -h must
	// never print a URL with a password in it.
	flag.StringVar(&o.dbURL, "database-url", "",
		"PostgreSQL URL of the ledger (default: $REPLAYCTL_DATABASE_URL, then $DATABASE_URL, then the local socket, database test)")
	for _, spec := range o.nats.Specs() {
		flag.StringVar(spec.Value, spec.Name, "", spec.Usage)
	}
	flag.StringVar(&o.recordsURL, "records-database-url", "", "PostgreSQL URL of the orders and the provider's charges, the fake provider's own log (default: the ledger's)")
	flag.StringVar(&o.stream, "stream", "BILLING", "stream of live and replayed charge requests")
	flag.StringVar(&o.dlqSubject, "dlq-subject", "dlq.billing.charge", "subject of the DLQ stream poison messages go to")
	flag.IntVar(&o.liveVersion, "live-version", 1, "effect version of live messages (2 has the fee fix)")
	flag.BoolVar(&o.shadowOnly, "shadow-only", false, "answer shadow requests only; do not consume the stream")
	flag.IntVar(&o.concurrency, "concurrency", 32, "shadow requests handled at once")
	flag.IntVar(&o.handlers, "handlers", 1024, "stream messages handled at once; each waits on the ledger's batched statements, and the pool does not grow with them (docs/ledger.md)")
	flag.BoolVar(&o.createStream, "create-stream", false, "create -stream on billing.> if it does not exist")
	flag.StringVar(&o.resultKeyring, "result-keyring", os.Getenv("REPLAYCTL_RESULT_KEYRING"), "keyring file (`replayctl keys keyring new`) sealing every stored receipt, AES-256-GCM; shadow opens them with --keyring (default: $REPLAYCTL_RESULT_KEYRING; empty: stored as they are)")
	flag.DurationVar(&o.reconcileAfter, "reconcile-after", envDuration("REPLAYCTL_RECONCILE_AFTER"), "how long a row stays uncertain before the reconcile worker asks the look-up about it (default: $REPLAYCTL_RECONCILE_AFTER, else the SDK's 15m)")
	flag.DurationVar(&o.reconcileInterval, "reconcile-interval", envDuration("REPLAYCTL_RECONCILE_INTERVAL"), "how often the reconcile worker looks for such rows (default: $REPLAYCTL_RECONCILE_INTERVAL, else the SDK's 1m)")
	flag.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on http://<addr>/metrics, e.g. 127.0.0.1:9464 (empty: none)")
	flag.DurationVar(&o.failChargesUntil, "fail-charges-until", 0, "simulate a payment provider outage: every charge fails (connection refused) for this long after start, e.g. 20s (0: none)")
	flag.DurationVar(&o.retryBackoff, "retry-backoff", time.Second, "nak delay after a message's first transient failure, doubled per delivery")
	flag.StringVar(&o.logLevel, "log-level", "warn", "the SDK's log level on stderr: warn (what needs a person), or info (every message processed, with its outcome)")
	flag.DurationVar(&o.lease, "lease", 0, "how long a claimed event stays this instance's without a heartbeat; after a crash its events wait this long for another instance (0: the SDK's 2m, heartbeat every quarter of it)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "billing-consumer:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if os.Getenv("GOGC") == "" {
		// The service's live heap is small and its garbage is per message: at the default 100 %
		// the collector ran every few milliseconds at 1,000 handlers and took a third of the
		// process's CPU, most of it scanning the handlers' stacks (docs/benchmarks.md). GOGC
		// set in the environment wins.
		debug.SetGCPercent(400)
	}
	dbURL := firstNonEmpty(o.dbURL, os.Getenv("REPLAYCTL_DATABASE_URL"), os.Getenv("DATABASE_URL"), "postgres:///test?host=/var/run/postgresql")
	stream := o.stream
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The SDK traces with the global OpenTelemetry provider, so it is installed before
	// consumer.New: a service of your own installs its provider there the same way.
	flush, err := tracing.Setup(ctx, "billing-consumer")
	if err != nil {
		fmt.Fprintf(os.Stderr, "billing-consumer: warning: %v; going on without traces\n", err)
	}
	defer flush()
	registry := prometheus.NewRegistry()
	if o.metricsAddr != "" {
		stopMetrics, err := serveMetrics(o.metricsAddr, registry)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	store, err := ledger.Open(ctx, dbURL, ledger.ForHandlers(o.handlers))
	if err != nil {
		return err
	}
	defer store.Close()
	natsSettings, err := natsconn.Resolve(o.nats, os.Getenv)
	if err != nil {
		return err
	}
	for _, note := range natsSettings.Notes() {
		fmt.Fprintln(os.Stderr, "billing-consumer: note:", note)
	}
	// natsconn's errors name the redacted servers and where each credential came from.
	nc, err := natsconn.Connect(natsSettings, "billing-consumer", 10*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	if o.createStream {
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"billing.>"}})
		if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("create stream %s: %w", stream, err)
		}
	}
	// The orders and the provider's charges are kept in the database, so every instance's look-up
	// answers alike.
	records, err := billing.OpenRecords(ctx, firstNonEmpty(o.recordsURL, dbURL))
	if err != nil {
		return err
	}
	defer records.Close()
	provider := billing.NewProvider()
	provider.Records = records
	if provider.Fail = outage(time.Now(), o.failChargesUntil, time.Now); provider.Fail != nil {
		fmt.Fprintf(os.Stderr, "billing-consumer: simulating a payment provider outage: every charge fails for %s\n", o.failChargesUntil)
	}
	orders := billing.SharedOrders(records)
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("-log-level %q: use warn or info", o.logLevel)
	}
	var resultKeyring *seal.Keyring
	if o.resultKeyring != "" {
		if resultKeyring, err = seal.ReadKeyringFile(o.resultKeyring); err != nil {
			return fmt.Errorf("-result-keyring: %w", err)
		}
	}
	c, err := consumer.New(consumer.Config{
		ResultKeyring: resultKeyring, ReconcileAfter: o.reconcileAfter, ReconcileInterval: o.reconcileInterval,
		Name: "billing", Store: store, Conn: nc, Stream: stream, DLQSubject: o.dlqSubject,
		LiveVersion: o.liveVersion, RetryBackoff: o.retryBackoff, Lease: o.lease, ShadowConcurrency: o.concurrency, Concurrency: o.handlers, Metrics: registry,
		Handler: orders.Record(billing.Handler(provider, time.Now)),
		Lookup:  billing.Lookup(provider, orders),
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	})
	if err != nil {
		return err
	}
	stopShadow, err := c.ServeShadow(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "billing-consumer: answering shadow requests on replay.shadow.billing; Ctrl-C stops")
	if o.shadowOnly {
		<-ctx.Done()
	} else if err := c.Run(ctx); err != nil {
		return err
	}
	stopShadow()
	// How well the ledger's writes and reads were batched: rows per statement is what the
	// consumer's rate rests on (docs/benchmarks.md).
	gc := store.GroupCommitStats()
	fmt.Fprintf(os.Stderr, "billing-consumer: stopped; the payment provider received %d calls; the ledger's writes went out as %d statements for %d rows (%s each on average), its reads as %d queries for %d events (%s each)\n",
		provider.Calls(""), gc.Statements, gc.Rows, perStatement(gc.StatementTime, gc.Statements), gc.ReadStatements, gc.ReadEvents, perStatement(gc.ReadTime, gc.ReadStatements))
	return nil
}

// serveMetrics serves reg on http://addr/metrics until stop is called. The listener is opened
// here, so a taken port fails the start instead of a scrape later.
func serveMetrics(addr string, reg *prometheus.Registry) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve metrics on -metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// Profiles beside the metrics, for docs/benchmarks.md's "where the consumer spends its time".
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "billing-consumer: metrics server:", err)
		}
	}()
	fmt.Fprintf(os.Stderr, "billing-consumer: Prometheus metrics on http://%s/metrics\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// perStatement is the average time of n statements that took total.
func perStatement(total time.Duration, n int64) string {
	if n == 0 {
		return "-"
	}
	return (total / time.Duration(n)).Round(10 * time.Microsecond).String()
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// envDuration is the duration in the environment variable name, 0 (the SDK's default) when unset;
// a value that is not a duration is said on stderr and left out.
func envDuration(name string) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "billing-consumer: warning: $%s=%q is not a duration such as 15m; the SDK's default applies\n", name, v)
	}
	return d
}
