package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// options are the soak's flags.
type options struct {
	duration          time.Duration
	seed              int64
	json              bool
	dbURL, natsServer string
	orders, consumers int
	failover          string
	// links puts fault proxies between the consumers and the ledger and NATS (linkFaultKinds).
	links bool
	// natsCluster runs three nats-servers in a cluster with R3 streams instead of one.
	natsCluster bool
	// consumerCmd runs another consumer than the Go example (a command line taking its flags);
	// with mixed, only every other consumer, so Go and the other SDK share the durable.
	consumerCmd string
	mixed       bool
}

// soak is one run's shared state: the binaries, the NATS server it kills, the report.
type soak struct {
	o                        options
	dir                      string
	replayctl, consumer, api string
	nats                     *natsServers
	rng                      *rand.Rand
	// mu guards report: the fault scheduler and a command's timer write to it too.
	mu     sync.Mutex
	report *Report
}

func run(o options) (*Report, error) {
	dir, err := os.MkdirTemp("", "replayctl-soak-")
	if err != nil {
		return nil, err
	}
	s := &soak{o: o, dir: dir, rng: rand.New(rand.NewPCG(uint64(o.seed), 0x50a4)),
		report: &Report{Seed: o.seed, FaultsByKind: map[string]int{}, Violations: []Violation{}}}
	// The logs stay when a check failed, for whoever reproduces it.
	defer func() {
		if len(s.report.Violations) == 0 {
			os.RemoveAll(dir)
		} else {
			logf("the processes' logs are kept in %s", dir)
		}
	}()
	s.replayctl, s.consumer, s.api = filepath.Join(dir, "replayctl"), filepath.Join(dir, "billing-consumer"), filepath.Join(dir, "billing-api")
	for bin, pkg := range map[string]string{s.replayctl: ".", s.consumer: "./examples/billing/cmd/billing-consumer", s.api: "./examples/billing/cmd/billing-api"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build %s: %v\n%s", pkg, err, out)
		}
	}
	if s.nats, err = newNATSServers(o.natsServer, dir, o.natsCluster); err != nil {
		return nil, err
	}
	// Stopped however the start went: a cluster that never elected a leader still has its nodes.
	defer s.nats.stop()
	if err := s.nats.start(); err != nil {
		return nil, err
	}
	// Ctrl-C ends the run after the round in progress, so its processes, servers and schemas are
	// cleaned up and the report still printed.
	interrupted, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	deadline := time.Now().Add(o.duration)
	for round := 1; time.Now().Before(deadline) && interrupted.Err() == nil; round++ {
		logf("round %d: %d orders, %d consumers", round, o.orders, o.consumers)
		if err := s.round(round); err != nil {
			return nil, fmt.Errorf("round %d: %w", round, err)
		}
		s.report.Rounds = round
	}
	return s.report, nil
}

func (s *soak) violation(round int, check, format string, args ...any) {
	v := Violation{Seed: s.o.seed, Round: round, Check: check, Detail: fmt.Sprintf(format, args...)}
	s.mu.Lock()
	s.report.Violations = append(s.report.Violations, v)
	s.mu.Unlock()
	logf("VIOLATION round %d %s: %s", round, check, v.Detail)
}

func (s *soak) fault(kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.report.Faults++
	s.report.FaultsByKind[kind]++
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s soak: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// natsProcess is a nats-server the soak runs, kills and restarts on one port and store.
type natsProcess struct {
	bin, dir, log string
	port          int
	// args are the cluster's options, for a node of one.
	args []string
	cmd  *exec.Cmd
}

func (n *natsProcess) url() string { return "nats://127.0.0.1:" + strconv.Itoa(n.port) }

func (n *natsProcess) start() error {
	logFile, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	n.cmd = exec.Command(n.bin, append([]string{"-a", "127.0.0.1", "-p", strconv.Itoa(n.port), "-js", "-sd", n.dir}, n.args...)...)
	n.cmd.Stdout, n.cmd.Stderr = logFile, logFile
	if err := n.cmd.Start(); err != nil {
		return fmt.Errorf("start nats-server: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(n.port)); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("nats-server did not listen on %d", n.port)
}

func (n *natsProcess) kill() {
	if n.cmd != nil && n.cmd.Process != nil {
		_ = n.cmd.Process.Kill()
		_ = n.cmd.Wait()
	}
}
