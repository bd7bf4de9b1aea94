// Command replayctl plans, shadows and executes dead-letter-queue replays on NATS JetStream with
// an idempotency ledger in PostgreSQL. See "replayctl --help".
package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/replayctl/replayctl/cmd"
)

func main() { os.Exit(run()) }

// run is main with the profile, if asked for, written before the exit: REPLAYCTL_CPUPROFILE=path
// writes a CPU profile of the whole command (docs/benchmarks.md uses it).
func run() int {
	if path := os.Getenv("REPLAYCTL_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "replayctl: REPLAYCTL_CPUPROFILE=%s: %v\n", path, err)
			return cmd.ExitUsage
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	return cmd.Execute()
}
