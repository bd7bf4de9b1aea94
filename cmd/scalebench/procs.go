package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// binaries are the programs the benchmark runs as separate processes, built once per run so
// their start-up is not `go run`'s compile.
type binaries struct {
	replayctl, consumer string
}

func build(ctx context.Context, dir string) (binaries, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return binaries{}, err
	}
	b := binaries{replayctl: filepath.Join(dir, "replayctl"), consumer: filepath.Join(dir, "billing-consumer")}
	for out, pkg := range map[string]string{b.replayctl: ".", b.consumer: "./examples/billing/cmd/billing-consumer"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			return binaries{}, fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
		}
	}
	return b, nil
}

// modulePath is the module scalebench builds replayctl and the billing consumer from.
const modulePath = "github.com/replayctl/replayctl"

// moduleRoot finds the replayctl module: the one the working directory is in, or else the one
// this source file was compiled from (go run and go build record its path), so scalebench runs
// from any directory.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	if mod := strings.TrimSpace(string(out)); isReplayctlModule(mod) {
		return filepath.Dir(mod), nil
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		for dir := filepath.Dir(file); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
			if isReplayctlModule(filepath.Join(dir, "go.mod")) {
				return dir, nil
			}
		}
	}
	return "", errors.New("cannot find the replayctl module to build from (this binary was built with -trimpath or its sources moved): run scalebench from inside a replayctl checkout (cd replayctl && go run ./cmd/scalebench)")
}

// isReplayctlModule says whether the go.mod at path declares the replayctl module.
func isReplayctlModule(path string) bool {
	if path == "" || path == os.DevNull {
		return false
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(string(raw), "\n")
	return strings.TrimSpace(first) == "module "+modulePath
}

// measured is one finished process: its wall time, CPU time, peak resident memory and output.
type measured struct {
	seconds    float64
	cpuSeconds float64
	maxRSSMiB  float64
	stdout     []byte
	exitCode   int
}

// runMeasured runs a program to its end with stderr going to logPath, and measures it.
func runMeasured(ctx context.Context, logPath string, name string, args ...string) (measured, error) {
	p, err := startProcess(ctx, logPath, name, args...)
	if err != nil {
		return measured{}, err
	}
	return p.wait()
}

// process is a program started in the background.
type process struct {
	cmd     *exec.Cmd
	stdout  bytes.Buffer
	log     *os.File
	started time.Time
	done    chan struct{}
	err     error
	// hwmKiB is the highest VmHWM read from /proc while the process ran. The kernel's ru_maxrss
	// cannot serve: a child started with vfork (as os/exec does) inherits the high-water mark of
	// the parent's memory at exec, so every child would report at least the benchmark's own RSS.
	hwmKiB atomic.Int64
	// cpu is the process's CPU time, and the benchmark's own, as sampled while it ran.
	cpu cpuTrace
}

func startProcess(ctx context.Context, logPath string, name string, args ...string) (*process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p := &process{log: log, done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, name, args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, log
	p.cmd.Cancel = func() error { return p.cmd.Process.Signal(syscall.SIGTERM) }
	p.cmd.WaitDelay = 30 * time.Second
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", filepath.Base(name), err)
	}
	go p.sampleHWM()
	go func() {
		p.err = p.cmd.Wait()
		p.log.Close()
		close(p.done)
	}()
	return p, nil
}

// exited says whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits for the end and measures it. A non-zero exit is not an error here: the caller
// decides what each exit code means.
func (p *process) wait() (measured, error) {
	<-p.done
	m := measured{seconds: time.Since(p.started).Seconds(), stdout: p.stdout.Bytes()}
	if ps := p.cmd.ProcessState; ps != nil {
		m.exitCode = ps.ExitCode()
		m.cpuSeconds = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	m.maxRSSMiB = float64(p.hwmKiB.Load()) / 1024
	var exitErr *exec.ExitError
	if p.err != nil && !errors.As(p.err, &exitErr) {
		return m, fmt.Errorf("%s: %w", filepath.Base(p.cmd.Path), p.err)
	}
	return m, nil
}

// sampleHWM reads the process's peak resident set (VmHWM, which only grows) and its CPU time
// every 10 ms until it ends, so at most the last 10 ms of its life go unseen.
func (p *process) sampleHWM() {
	path := fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if cpu, ok := procCPU(p.cmd.Process.Pid); ok {
			p.cpu.add(cpuSample{at: time.Now(), child: cpu, self: selfCPU(),
				childIO: procIO(strconv.Itoa(p.cmd.Process.Pid)), selfIO: procIO("self")})
		}
		if raw, err := os.ReadFile(path); err == nil {
			for line := range strings.Lines(string(raw)) {
				if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					if kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64); err == nil && kib > p.hwmKiB.Load() {
						p.hwmKiB.Store(kib)
					}
				}
			}
		}
		select {
		case <-p.done:
			return
		case <-tick.C:
		}
	}
}

// stop asks the process to end (SIGTERM) and waits for it.
func (p *process) stop() (measured, error) {
	if !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
		}
	}
	return p.wait()
}
