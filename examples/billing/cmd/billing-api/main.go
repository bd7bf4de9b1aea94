// Command billing-api serves the example billing service's HTTP API behind the idempotency
// middleware (package idempotency), on the same fake payment provider and ledger as
// billing-consumer: POST /v1/charges takes the order JSON the consumer takes, with an
// Idempotency-Key and a bearer token, and charges it once per key. docs/api.md is the guide.
//
//	go run ./examples/billing/cmd/billing-api -addr 127.0.0.1:8080
//	curl -s -X POST http://127.0.0.1:8080/v1/charges -H 'Authorization: Bearer demo-alice' \
//	  -H 'Idempotency-Key: 0b7a…' -d '{"orderId":"ord-1","customer":"c1","amountCents":1250,"currency":"EUR"}'
//
// Without -tokens it knows demo-alice and demo-bob (tenant acme) and demo-carol (tenant globex);
// a tokens file ("TOKEN TENANT PRINCIPAL [revoked]" a line) replaces them and is read again on
// SIGHUP. Without -key-secret-file and -keyring it uses the public demo secret and keyring.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/replayctl/replayctl/idempotency"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/seal"
)

type options struct {
	addr, dbURL, tokensFile, secretFile, keyringFile string
	// recordsURL keeps the orders and the provider's charges, the fake provider's own log,
	// apart from the ledger when set (the fault soak fails the ledger over, not the provider).
	recordsURL            string
	lease, reconcileEvery time.Duration
	// hangAfterCharge stops every request after its charge and before its response is stored:
	// the moment a crash leaves a record uncertain (the fault tests kill -9 it there).
	hangAfterCharge bool
	// pauseBeforeCharge holds each request this long after its call-started mark, before its
	// charge reaches the provider: the window a SIGSTOP freezes a process in (the fault tests do).
	pauseBeforeCharge time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.addr, "addr", "127.0.0.1:8080", "HOST:PORT to serve the API on (port 0: any; the address is printed)")
	flag.StringVar(&o.dbURL, "database-url", firstNonEmpty(os.Getenv("REPLAYCTL_DATABASE_URL"), os.Getenv("DATABASE_URL"),
		"postgres:///test?host=/var/run/postgresql"), "PostgreSQL URL of the ledger")
	flag.StringVar(&o.recordsURL, "records-database-url", "", "PostgreSQL URL of the orders and the provider's charges, the fake provider's own log (default: the ledger's)")
	flag.StringVar(&o.tokensFile, "tokens", "", `bearer tokens file, "TOKEN TENANT PRINCIPAL [revoked]" a line, read again on SIGHUP (default: demo-alice, demo-bob, demo-carol)`)
	flag.StringVar(&o.secretFile, "key-secret-file", os.Getenv("REPLAYCTL_KEY_SECRET_FILE"), "file with the base64 HMAC secret of the idempotency keys (default: the public demo secret)")
	flag.StringVar(&o.keyringFile, "keyring", os.Getenv("REPLAYCTL_KEYRING_FILE"), `keyring file sealing stored responses, "ID base64-key" a line, newest last (default: the public demo keyring)`)
	flag.DurationVar(&o.lease, "lease", 30*time.Second, "lease of a request's record, renewed while its handler runs")
	flag.DurationVar(&o.reconcileEvery, "reconcile-every", 30*time.Second, "how often uncertain records are looked up at the provider (0: never)")
	flag.BoolVar(&o.hangAfterCharge, "hang-after-charge", false, "fault injection: stop each request after its charge, before its response is stored")
	flag.DurationVar(&o.pauseBeforeCharge, "pause-before-charge", 0, "fault injection: hold each request this long after its call-started mark, before its charge")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "billing-api:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	secret, keyring, err := secrets(o)
	if err != nil {
		return err
	}
	var tokens atomic.Pointer[billing.Tokens]
	if err := loadTokens(o.tokensFile, &tokens); err != nil {
		return err
	}
	go reloadTokensOnHUP(ctx, o.tokensFile, &tokens)
	store, err := ledger.Open(ctx, o.dbURL)
	if err != nil {
		return err
	}
	defer store.Close()
	records, err := billing.OpenRecords(ctx, firstNonEmpty(o.recordsURL, o.dbURL))
	if err != nil {
		return err
	}
	defer records.Close()
	provider := billing.NewProvider()
	provider.Records = records
	route := billing.ChargesRoute(provider)
	registry := prometheus.NewRegistry()
	keeper, err := idempotency.New(ctx, idempotency.Config{
		Store: store, KeySecret: secret, Keyring: keyring, Routes: []idempotency.Route{route},
		Scope:     func(r *http.Request) (idempotency.Scope, error) { return tokens.Load().Scope(r) },
		Authorize: func(r *http.Request, s idempotency.Scope) error { return tokens.Load().Authorize(r, s) },
		Service:   "billing-api", Lease: o.lease, Metrics: registry,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	defer keeper.Close(context.Background())
	if o.reconcileEvery > 0 {
		go keeper.RunReconciler(ctx, o.reconcileEvery, o.lease)
	}
	handler := billing.APIHandler(provider, time.Now)
	if o.hangAfterCharge {
		provider.FailAfter = func(kind, _ string) error {
			fmt.Fprintln(os.Stderr, "billing-api: charged; hanging before the response is stored (-hang-after-charge)")
			select {}
		}
	}
	if o.pauseBeforeCharge > 0 {
		provider.Fail = func(string, string) error {
			fmt.Fprintf(os.Stderr, "billing-api: call started; pausing %s before the charge (-pause-before-charge)\n", o.pauseBeforeCharge)
			time.Sleep(o.pauseBeforeCharge)
			return nil
		}
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", keeper.Handler(route.Method, route.Template, handler))
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on -addr %s: %w", o.addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "billing-api: serving POST http://%s/v1/charges; Ctrl-C stops\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintf(os.Stderr, "billing-api: stopped; the payment provider received %d calls\n", provider.Calls(""))
	return nil
}

func secrets(o options) ([]byte, *seal.Keyring, error) {
	secret, keyring := billing.DemoKeySecret(), billing.DemoKeyring()
	var err error
	if o.secretFile != "" {
		if secret, err = idempotency.ReadKeySecretFile(o.secretFile); err != nil {
			return nil, nil, err
		}
	}
	if o.keyringFile != "" {
		if keyring, err = seal.ReadKeyringFile(o.keyringFile); err != nil {
			return nil, nil, err
		}
	}
	if o.secretFile == "" || o.keyringFile == "" {
		fmt.Fprintln(os.Stderr, "billing-api: note: using the public demo key secret or keyring; pass -key-secret-file and -keyring in production")
	}
	return secret, keyring, nil
}

func loadTokens(path string, into *atomic.Pointer[billing.Tokens]) error {
	if path == "" {
		into.Store(billing.DemoTokens())
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read -tokens: %w", err)
	}
	t, err := billing.ParseTokens(data)
	if err != nil {
		return fmt.Errorf("-tokens %s: %w", path, err)
	}
	into.Store(t)
	return nil
}

func reloadTokensOnHUP(ctx context.Context, path string, into *atomic.Pointer[billing.Tokens]) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		if err := loadTokens(path, into); err != nil {
			fmt.Fprintln(os.Stderr, "billing-api: tokens not reloaded, the old ones stay:", err)
			continue
		}
		fmt.Fprintln(os.Stderr, "billing-api: tokens reloaded")
	}
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
