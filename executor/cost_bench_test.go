package executor_test

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// cost is what the process spent between two points of a benchmark: CPU (user and system, the
// in-process NATS server included) and heap allocations. Wall time on a shared two-core machine
// moves with everyone else's load; these move with the code.
type cost struct {
	cpu    time.Duration
	allocs uint64
	bytes  uint64
}

// costMeter takes the process's cost so far; since returns what was spent after it.
type costMeter struct{ start cost }

func startCost(b *testing.B) costMeter { return costMeter{start: costNow(b)} }

func (m costMeter) since(b *testing.B) cost {
	now := costNow(b)
	return cost{cpu: now.cpu - m.start.cpu, allocs: now.allocs - m.start.allocs, bytes: now.bytes - m.start.bytes}
}

func costNow(b *testing.B) cost {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return cost{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), allocs: ms.Mallocs, bytes: ms.TotalAlloc}
}

func (c cost) plus(d cost) cost {
	return cost{cpu: c.cpu + d.cpu, allocs: c.allocs + d.allocs, bytes: c.bytes + d.bytes}
}

// perTarget is c over n targets: CPU in microseconds, allocations and bytes.
func (c cost) perTarget(n int) (cpuMicros, allocs, bytes float64) {
	return float64(c.cpu.Microseconds()) / float64(n), float64(c.allocs) / float64(n), float64(c.bytes) / float64(n)
}
