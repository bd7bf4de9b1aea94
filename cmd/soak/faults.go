package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// consumerLease is the consumers' lease: a killed consumer's events wait this long before
// another takes them over. At the SDK's default of 2 minutes the calm phase (calmExecutes of
// settleTimeout) ended before the leases of consumers killed late in a round had lapsed: rows
// left processing that were only waiting for their lease (docs/reliability.md).
const consumerLease = 6 * time.Second

// The fault menu of a single server: each a moment's choice of the round's seeded generator.
var faultKinds = []string{"consumer-kill9", "consumer-sigstop", "consumer-sigint", "execute-kill9", "execute-sigint",
	"nats-kill9-restart", "ledger-sessions-killed"}

func (r *roundEnv) startConsumer(i int) error {
	logFile, err := os.OpenFile(filepath.Join(r.s.dir, fmt.Sprintf("consumer-%d-%d.log", r.round, i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	name, args := r.s.consumer, []string{"-database-url", r.consumerURL, "-records-database-url", r.recordsURL, "-nats-url", r.consumerNATS, "-stream", "BILLING",
		"-dlq-subject", "dlq.billing.charge", "-retry-backoff", "100ms", "-handlers", "64", "-lease", consumerLease.String(),
		"-log-level", "info"}
	if fields := strings.Fields(r.s.o.consumerCmd); len(fields) > 0 && (!r.s.o.mixed || i%2 == 1) {
		name, args = fields[0], append(fields[1:], args...)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start billing consumer %d: %w", i, err)
	}
	logf("round %d: consumer %d started, pid %d", r.round, i, cmd.Process.Pid)
	go func() { _ = cmd.Wait(); logFile.Close() }()
	r.mu.Lock()
	for len(r.consumers) <= i {
		r.consumers = append(r.consumers, nil)
	}
	r.consumers[i] = cmd
	r.mu.Unlock()
	return nil
}

func (r *roundEnv) stopConsumers() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.consumers {
		if c != nil && c.Process != nil {
			_ = c.Process.Signal(syscall.SIGCONT)
			_ = c.Process.Kill()
		}
	}
}

// alive reports whether the consumer process is still running.
func alive(c *exec.Cmd) bool {
	return c != nil && c.Process != nil && c.Process.Signal(syscall.Signal(0)) == nil && c.ProcessState == nil
}

// healConsumers continues a stopped consumer and restarts a dead one, so the round's rows settle.
func (r *roundEnv) healConsumers() {
	for i := range r.s.o.consumers {
		r.mu.Lock()
		c := r.consumers[i]
		r.mu.Unlock()
		if c != nil && c.Process != nil {
			_ = c.Process.Signal(syscall.SIGCONT)
		}
		if !alive(c) {
			_ = r.startConsumer(i)
		}
	}
}

// startFaults injects a fault every 0.3 to 2.5 s until the returned func is called.
func (r *roundEnv) startFaults() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(200+r.rng.IntN(1300)) * time.Millisecond):
			}
			r.inject(ctx, r.menu[r.rng.IntN(len(r.menu))])
		}
	}()
	return func() { cancel(); <-done }
}

func (r *roundEnv) inject(ctx context.Context, kind string) {
	between := func(min, span int) time.Duration { return time.Duration(min+r.rng.IntN(span)) * time.Millisecond }
	pause := func(min, span int) { time.Sleep(between(min, span)) }
	i := r.rng.IntN(r.s.o.consumers)
	r.mu.Lock()
	c, execute := r.consumers[i], r.execute
	r.mu.Unlock()
	switch kind {
	case "consumer-kill9", "consumer-sigint":
		if !alive(c) {
			return
		}
		sig := syscall.SIGKILL
		if kind == "consumer-sigint" {
			sig = syscall.SIGINT
		}
		_ = c.Process.Signal(sig)
		deadline := time.Now().Add(10 * time.Second)
		for alive(c) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(c) {
			_ = c.Process.Kill()
		}
		pause(200, 800)
		_ = r.startConsumer(i)
	case "consumer-sigstop":
		if !alive(c) {
			return
		}
		_ = c.Process.Signal(syscall.SIGSTOP)
		// Half the stops outlast the lease: the consumer wakes to find its events taken over or
		// uncertain, and must not make a call under a lease it lost.
		pause(1000, int(2*consumerLease/time.Millisecond))
		_ = c.Process.Signal(syscall.SIGCONT)
	case "execute-kill9", "execute-sigint":
		if execute == nil || execute.Process == nil {
			return
		}
		sig := syscall.SIGKILL
		if kind == "execute-sigint" {
			sig = syscall.SIGINT
		}
		_ = execute.Process.Signal(sig)
	case "nats-kill9-restart", "nats-leader-kill9-restart":
		node := r.rng.IntN(len(r.s.nats.nodes))
		if kind == "nats-leader-kill9-restart" {
			if node = r.s.nats.leaderOf("BILLING"); node < 0 {
				return
			}
		}
		if err := r.s.nats.killRestart(node, between(300, 1200)); err != nil {
			logf("round %d: restart nats-server n%d: %v", r.round, node+1, err)
		}
	case "ledger-failover":
		if r.pair == nil || r.pair.replica == nil {
			return
		}
		if err := r.pair.failover(); err != nil {
			logf("round %d: failover: %v", r.round, err)
			return
		}
	case "ledger-restart":
		if r.pair == nil {
			return
		}
		if err := r.pair.restart(); err != nil {
			logf("round %d: %v", r.round, err)
			return
		}
	case "api-kill9":
		r.killAPI(between(200, 800))
	case "ledger-link-reset", "ledger-link-stall", "ledger-link-latency", "ledger-reply-cut", "nats-link-reset", "nats-link-stall":
		r.injectLink(kind, between)
	case "ledger-sessions-killed":
		if _, err := r.pool.Exec(ctx, `select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1`, appName); err != nil {
			return
		}
	}
	r.s.fault(kind)
	logf("round %d: fault %s", r.round, kind)
}

// dumpConsumers asks each consumer for a dump of its goroutines (SIGQUIT; Go prints them on
// stderr, the consumer's log, and exits): where a handler that never finishes is waiting.
func (r *roundEnv) dumpConsumers() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range r.consumers {
		if alive(c) {
			_ = c.Process.Signal(syscall.SIGQUIT)
			logf("round %d: consumer %d's goroutines are dumped in consumer-%d-%d.log", r.round, i, r.round, i)
		}
	}
	time.Sleep(time.Second)
}
