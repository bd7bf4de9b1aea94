// Package slowtest marks the fault and timing tests that take seconds each (servers killed and
// restarted, leases left to lapse, stalls waited out). `go test ./...`, the README's command,
// skips them so it stays under two minutes; .ci/run runs them with REPLAYCTL_FAULT_TESTS=1.
package slowtest

import (
	"os"
	"testing"
)

// Env is the variable that runs the slow tests.
const Env = "REPLAYCTL_FAULT_TESTS"

// Pattern selects every slow test by name, for `go test -run`; .ci/run passes it.
const Pattern = "Fault|Crash|NATSPermissions|Stall|StuckLease|Reconnect|Fleet|RidesThrough|MemoryIsBounded"

// Require skips t unless Env is set.
func Require(t testing.TB) {
	t.Helper()
	if os.Getenv(Env) == "" {
		t.Skipf("a fault or timing test that takes seconds: %s=1 runs it (.ci/run does)", Env)
	}
}
