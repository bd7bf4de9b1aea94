// Command scalebench measures replayctl at scale on this machine: it seeds a billing DLQ and ledger
// of N events, runs plan, validate, shadow and execute as an operator would (the replayctl binary
// and the example billing consumer as separate processes, each timed with its peak RSS), and in
// the same run the baselines they are judged against: the naive replay script a user would write
// (one ledger SELECT and one synchronous publish per event) and the machine's limits (a raw
// JetStream async publish of the same messages, a raw scan of the DLQ, a raw bulk join of the IDs
// in PostgreSQL). It prints every figure and the ratios replayctl/baseline. docs/benchmarks.md
// has the results and how to read them.
//
//	go run ./cmd/scalebench -n 100000
//	go run ./cmd/scalebench -n 1000000 -json > bench-1m.json
//	go run ./cmd/scalebench -n 20000 -consumer-sweep 16,64,256,1024
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// config is what the flags set.
type config struct {
	events            int
	naiveEvents       int
	databaseURL       string
	natsURL           string
	shadowConcurrency int
	consumerHandlers  int
	consumerAfter     bool
	// sweep, when set, runs only the billing consumer alone at each of these handler counts.
	sweep       []int
	skipExecute bool
	// ledgerRows completed rows of the consumer are in the ledger before the run: its cost must
	// follow the job, not the history behind it.
	ledgerRows int
	keep       bool
	jsonOut    bool
	// consumerCmd runs another consumer than the Go example: a command line taking its flags
	// (-database-url, -nats-url, -stream, -dlq-subject, -handlers, -shadow-only, -concurrency).
	consumerCmd string
}

func main() {
	var cfg config
	flag.IntVar(&cfg.events, "n", 100_000, "events in the seeded DLQ (at least 200)")
	flag.IntVar(&cfg.naiveEvents, "naive", 20_000, "events the naive script replays (its rate is per event; it is too slow for a million)")
	flag.StringVar(&cfg.databaseURL, "database-url", "postgres:///test?host=/var/run/postgresql", "PostgreSQL database; the run uses a fresh schema in it and drops it")
	flag.StringVar(&cfg.natsURL, "nats-url", "", "NATS server with JetStream (default: an in-process server in a temp dir)")
	flag.IntVar(&cfg.shadowConcurrency, "shadow-concurrency", 64, "replayctl shadow --concurrency, and the responder's")
	flag.IntVar(&cfg.consumerHandlers, "handlers", 256, "billing consumer messages handled at once during execute (and the hand-written consumer's)")
	// Off by default: the end-to-end rate is from the first publish to the last outcome with the
	// consumer running, as an operator runs it. On, execute runs without a canary (--canary 0),
	// because a canary waits for outcomes that a consumer not yet started never writes.
	flag.BoolVar(&cfg.consumerAfter, "consumer-after-publish", false,
		"start the billing consumer only once execute has published every target (and run execute with --canary 0), so the publish rate is execute's own and not shared with the consumer")
	flag.BoolVar(&cfg.skipExecute, "skip-execute", false, "stop after shadow")
	sweep := flag.String("consumer-sweep", "", "measure only the billing consumer alone, once per handler count (e.g. 16,64,256,1024), on -n live orders each, beside raw async publish")
	flag.IntVar(&cfg.ledgerRows, "ledger-rows", 0, "fill the ledger with this many completed rows of the consumer (other events) before the run; not timed")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the schema, streams and temp dir for a look afterwards")
	flag.BoolVar(&cfg.jsonOut, "json", false, "print the results as JSON on stdout")
	flag.StringVar(&cfg.consumerCmd, "consumer-cmd", "", "the consumer to run instead of the Go billing example, as a command line that takes its flags, e.g. 'node sdk/typescript/dist/examples/billing/main.js'")
	flag.Parse()
	if *sweep != "" {
		var err error
		if cfg.sweep, err = parseHandlers(*sweep); err != nil {
			fmt.Fprintln(os.Stderr, "scalebench:", err)
			os.Exit(2)
		}
	}
	if cfg.events < 200 || cfg.naiveEvents < 1 {
		fmt.Fprintln(os.Stderr, "scalebench: -n must be at least 200 and -naive at least 1")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, cfg)
	if res != nil {
		if cfg.jsonOut {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			_ = enc.Encode(res)
		} else {
			res.print(os.Stdout)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		os.Exit(1)
	}
}

// logf reports progress on stderr, so stdout stays the results.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
