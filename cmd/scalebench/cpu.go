package main

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat's CPU times: USER_HZ, 100 on every Linux port.
const clockTick = 10 * time.Millisecond

// selfCPU is this process's user+system time so far: the NATS server's and the baselines' own.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is process pid's user+system time so far, read from /proc while it runs (its rusage
// is only known once it exited, for the whole of its life).
func procCPU(pid int) (time.Duration, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name may hold spaces; the fields after it are fixed: utime and stime are the
	// 12th and 13th after the closing parenthesis.
	_, rest, ok := strings.Cut(string(raw), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * clockTick, true
}

// cpuSample is a child's CPU time and this process's, read at one moment, with their read and
// write system calls (syscr, syscw of /proc/<pid>/io): messages per write say how well the NATS
// connections batch, which CPU per message follows.
type cpuSample struct {
	at          time.Time
	child, self time.Duration
	childIO     ioCalls
	selfIO      ioCalls
}

// ioCalls counts a process's read and write system calls.
type ioCalls struct{ reads, writes int64 }

func (c ioCalls) minus(d ioCalls) ioCalls {
	return ioCalls{reads: c.reads - d.reads, writes: c.writes - d.writes}
}

// procIO reads /proc/<pid>/io ("self" for this process); zero when it cannot be read.
func procIO(pid string) ioCalls {
	raw, err := os.ReadFile("/proc/" + pid + "/io")
	if err != nil {
		return ioCalls{}
	}
	var c ioCalls
	for line := range strings.Lines(string(raw)) {
		name, value, _ := strings.Cut(strings.TrimSpace(line), ": ")
		n, _ := strconv.ParseInt(value, 10, 64)
		switch name {
		case "syscr":
			c.reads = n
		case "syscw":
			c.writes = n
		}
	}
	return c
}

// cpuTrace is a child's CPU time over its life, sampled every few milliseconds, so a phase
// inside it (execute's publishing) can be costed from the timestamps the child reports.
type cpuTrace struct {
	mu      sync.Mutex
	samples []cpuSample
}

func (t *cpuTrace) add(s cpuSample) {
	t.mu.Lock()
	t.samples = append(t.samples, s)
	t.mu.Unlock()
}

// between is the CPU the child and this process spent from from to to, each end taken at the
// last sample at or before it (10 ms samples, 10 ms ticks: about ±20 ms).
func (t *cpuTrace) between(from, to time.Time) (child, self cpuSample, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at := func(when time.Time) (cpuSample, bool) {
		var last cpuSample
		found := false
		for _, s := range t.samples {
			if s.at.After(when) {
				break
			}
			last, found = s, true
		}
		return last, found
	}
	a, okA := at(from)
	b, okB := at(to)
	if !okA || !okB {
		return cpuSample{}, cpuSample{}, false
	}
	child = cpuSample{child: b.child - a.child, childIO: b.childIO.minus(a.childIO)}
	self = cpuSample{self: b.self - a.self, selfIO: b.selfIO.minus(a.selfIO)}
	return child, self, true
}

// perTargetMicros is cpu over n events, in microseconds.
func perTargetMicros(cpu time.Duration, n int64) float64 {
	return float64(cpu.Microseconds()) / float64(n)
}

// perCall is n events over calls system calls (0 when there were none).
func perCall(n, calls int64) float64 {
	if calls <= 0 {
		return 0
	}
	return float64(n) / float64(calls)
}
