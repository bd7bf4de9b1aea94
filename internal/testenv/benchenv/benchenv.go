// Package benchenv reads the sizes benchmarks take from the environment (REPLAYCTL_BENCH_*), so
// every benchmark parses and refuses them alike.
package benchenv

import (
	"os"
	"strconv"
	"testing"
)

// Int returns the positive integer in the environment variable name, or def when it is unset.
// Anything else fails the benchmark, naming the variable.
func Int(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
