// Command replayctl plans, shadows and executes dead-letter-queue replays on NATS JetStream with
// an idempotency ledger in PostgreSQL. See "replayctl --help".
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/replayctl/replayctl/internal/cli"
	"github.com/replayctl/replayctl/internal/cmdutil"
)

func main() { os.Exit(run()) }

// run is main with the profiles, if asked for, written before the exit (docs/benchmarks.md uses
// them): REPLAYCTL_CPUPROFILE=path writes a CPU profile of the whole command, and
// REPLAYCTL_TRACE=path an execution trace, which shows where a command waits rather than computes
// (`go tool trace -pprof=sync path`).
func run() int {
	stop, err := startProfiles()
	if err != nil {
		fmt.Fprintf(os.Stderr, "replayctl: %v\n", err)
		return cmdutil.ExitUsage
	}
	defer stop()
	return cli.Execute()
}

func startProfiles() (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	for _, p := range []struct {
		env   string
		start func(*os.File) error
		end   func()
	}{
		{"REPLAYCTL_CPUPROFILE", func(f *os.File) error { return pprof.StartCPUProfile(f) }, pprof.StopCPUProfile},
		{"REPLAYCTL_TRACE", func(f *os.File) error { return trace.Start(f) }, trace.Stop},
	} {
		path := os.Getenv(p.env)
		if path == "" {
			continue
		}
		f, err := os.Create(path)
		if err == nil {
			err = p.start(f)
		}
		if err != nil {
			stop()
			return nil, fmt.Errorf("%s=%s: %w", p.env, path, err)
		}
		stops = append(stops, func() { p.end(); f.Close() })
	}
	return stop, nil
}
