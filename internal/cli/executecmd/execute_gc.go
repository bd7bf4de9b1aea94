package executecmd

import (
	"os"
	"runtime/debug"
)

// executeGCPercent is how far execute's heap grows past the live heap before a collection. The
// live heap is small (a few pages of targets, the messages in flight) and every target leaves a
// few kilobytes of garbage, so at Go's default of 100 the collector ran every thousand or so
// targets and took about a fifth of the process's CPU while it published (docs/benchmarks.md).
const executeGCPercent = 400

// collectLessOftenForExecute sets executeGCPercent unless GOGC in the environment says otherwise.
// Only execute: plan's live heap grows with the DLQ, and its peak memory is a target of its own.
func collectLessOftenForExecute() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(executeGCPercent)
	}
}
