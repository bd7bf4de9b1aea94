package executor_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"
)

// benchProfiler writes profiles of execute's publishing alone when REPLAYCTL_BENCH_PROFILE names
// a directory: a profile of the whole benchmark is mostly the seeding, plan and shadow before it.
// Run i writes exec-i.cpu, a CPU profile (`go tool pprof exec-*.cpu` merges them), and
// exec-i-start.heap and exec-i-end.heap, compared with
// `go tool pprof -sample_index=alloc_space -base exec-0-start.heap exec-0-end.heap`.
type benchProfiler struct {
	dir string
	run int
	cpu *os.File
}

func newBenchProfiler() *benchProfiler {
	return &benchProfiler{dir: os.Getenv("REPLAYCTL_BENCH_PROFILE")}
}

func (p *benchProfiler) start(b *testing.B) {
	if p.dir == "" || p.cpu != nil {
		return
	}
	p.heap(b, fmt.Sprintf("exec-%d-start.heap", p.run))
	f, err := os.Create(filepath.Join(p.dir, fmt.Sprintf("exec-%d.cpu", p.run)))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	p.cpu = f
}

func (p *benchProfiler) stop(b *testing.B) {
	if p.cpu == nil {
		return
	}
	pprof.StopCPUProfile()
	_ = p.cpu.Close()
	p.heap(b, fmt.Sprintf("exec-%d-end.heap", p.run))
	p.cpu = nil
	p.run++
}

func (p *benchProfiler) heap(b *testing.B, name string) {
	f, err := os.Create(filepath.Join(p.dir, name))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}
