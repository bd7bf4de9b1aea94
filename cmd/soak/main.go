// Command soak replays DLQs of billing orders round after round while a scheduler driven by a
// seed injects faults at random moments (kill -9, SIGSTOP and SIGINT of the billing consumers and
// of execute, kill -9 and restart of nats-server, killed ledger sessions, and through proxies on
// the consumers' connections resets, stalls, latency and replies cut after the server did the
// work; with -failover, the ledger's primary restarted, or stopped and its replica promoted),
// then checks each round
// against the fake provider's own call log, not the ledger: every order charged exactly once, or
// never and left uncertain or failed where an operator sees it; no job that cannot finish; no
// execute that hangs past its settle timeout. Exit 1 when any check failed.
//
//	go run ./cmd/soak -duration 90s -seed 1 [-json]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"
)

// Report is the soak's result; -json prints it.
type Report struct {
	Seed         int64          `json:"seed"`
	Faults       int            `json:"faults"`
	FaultsByKind map[string]int `json:"faultsByKind"`
	Rounds       int            `json:"rounds"`
	Orders       int            `json:"orders"`
	Checks       int            `json:"checks"`
	Violations   []Violation    `json:"violations"`
}

// Violation is one failed check, with the seed and round that reproduce it.
type Violation struct {
	Seed   int64  `json:"seed"`
	Round  int    `json:"round"`
	Check  string `json:"check"`
	Detail string `json:"detail"`
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 90*time.Second, "run rounds until this much time has passed")
	flag.Int64Var(&o.seed, "seed", 1, "seed of the orders and of the fault schedule: the same seed replays the same choices")
	flag.BoolVar(&o.json, "json", false, "print the report as JSON on stdout")
	flag.StringVar(&o.dbURL, "database-url", "postgres:///test?host=/var/run/postgresql", "PostgreSQL database: each round works in a fresh schema of it and drops it")
	flag.StringVar(&o.natsServer, "nats-server", "/usr/sbin/nats-server", "nats-server binary the soak starts (and kills) on a spare port")
	flag.IntVar(&o.orders, "orders", 120, "orders per round")
	flag.IntVar(&o.consumers, "consumers", 2, "billing consumers per round, each its own process")
	flag.StringVar(&o.failover, "failover", "off", "sync or async: each round's ledger is a private primary with a streaming replica (synchronous or not) promoted at a random moment; off: -database-url")
	flag.BoolVar(&o.links, "links", true, "put a fault proxy between the consumers and the ledger and one between the consumers and NATS: connections reset, stalled, slowed, and a reply cut after the server did the work")
	flag.StringVar(&o.consumerCmd, "consumer-cmd", "", "run this consumer instead of the Go billing example, a command line that takes its flags, e.g. 'node sdk/typescript/dist/examples/billing/main.js'")
	flag.BoolVar(&o.mixed, "mixed", false, "with -consumer-cmd, run it as every other consumer beside the Go example (a mixed fleet on one durable)")
	flag.BoolVar(&o.natsCluster, "nats-cluster", false, "run a three-node NATS cluster with R3 streams instead of one server; kill -9 a random node or the BILLING stream's leader")
	flag.Parse()
	if o.failover != "off" && o.failover != "sync" && o.failover != "async" {
		fmt.Fprintf(os.Stderr, "soak: -failover %q: give off, sync or async\n", o.failover)
		os.Exit(2)
	}
	r, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	if o.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(r)
	} else {
		printReport(r)
	}
	if len(r.Violations) > 0 {
		os.Exit(1)
	}
}

func printReport(r *Report) {
	fmt.Printf("soak seed %d: %d rounds, %d orders, %d faults, %d checks, %d violations\n", r.Seed, r.Rounds, r.Orders, r.Faults, r.Checks, len(r.Violations))
	for kind, n := range r.FaultsByKind {
		fmt.Printf("  fault %-24s %d\n", kind, n)
	}
	for _, v := range r.Violations {
		fmt.Printf("VIOLATION (seed %d, round %d) %s: %s\n", v.Seed, v.Round, v.Check, v.Detail)
	}
}
