// Command conformance checks a consumer, in any language, against the consumer protocol
// (docs/protocol.md): it starts the consumer under test with NATS_URL, DATABASE_URL and
// REPLAYCTL_CONSUMER in its environment, on a fresh ledger schema and (unless -nats-url) a NATS
// server of its own, drives it through every rule over NATS and the ledger, and reports each rule
// with what it saw. Exit 0 when every rule holds, 1 when one does not, 2 when the run could not
// start. docs/sdk-authors.md says what a consumer under test must be.
//
//	go run ./cmd/conformance -consumer-cmd 'go run ./examples/billing/cmd/billing-consumer'
//	go run ./cmd/conformance -consumer-cmd 'npx billing-consumer-ts' -json
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/conformance"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/natsembed"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/seal"
)

type options struct {
	consumerCmd, databaseURL, natsURL, ready, only string
	timeout, readyTimeout                          time.Duration
	json, keep                                     bool
}

func main() {
	var o options
	flag.StringVar(&o.consumerCmd, "consumer-cmd", "", "the consumer under test, a shell command line run with NATS_URL, DATABASE_URL and REPLAYCTL_CONSUMER set (required)")
	flag.StringVar(&o.databaseURL, "database-url", "", "PostgreSQL database the kit makes its fresh ledger schema in (default: $DATABASE_URL, then the local server's database test)")
	flag.StringVar(&o.natsURL, "nats-url", "", "NATS server with JetStream (default: a server of the kit's own on a free loopback port)")
	flag.StringVar(&o.ready, "ready", "answering shadow requests", "text the consumer prints on stdout or stderr once it serves")
	flag.DurationVar(&o.readyTimeout, "ready-timeout", 2*time.Minute, "how long the consumer may take to print -ready (a `go run` compiles first)")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long one rule may take")
	flag.StringVar(&o.only, "rules", "", "comma-separated rules to check (default: all; -list names them)")
	flag.BoolVar(&o.json, "json", false, "print the report as JSON")
	flag.BoolVar(&o.keep, "keep", false, "keep the ledger schema after the run, to look at its rows")
	list := flag.Bool("list", false, "list the rules and exit")
	flag.Parse()
	if *list {
		for _, r := range conformance.Rules() {
			fmt.Printf("%-34s %s\n", r.Name, r.Says)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	report, err := run(ctx, o, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
	if o.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(report)
	} else {
		printReport(os.Stdout, report)
	}
	if report.Failed > 0 {
		os.Exit(1)
	}
}

func printReport(w io.Writer, r *conformance.Report) {
	for _, res := range r.Results {
		verdict := "PASS"
		if !res.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "%s  %-34s %s (%.1fs)\n", verdict, res.Rule, res.Says, res.Seconds)
		if !res.Pass {
			fmt.Fprintf(w, "      saw: %s\n", res.Saw)
		}
	}
	fmt.Fprintf(w, "%d of %d rules hold\n", r.Passed, r.Passed+r.Failed)
}

func selectRules(only string) ([]conformance.Rule, error) {
	all := conformance.Rules()
	if only == "" {
		return all, nil
	}
	var out []conformance.Rule
	for _, name := range strings.Split(only, ",") {
		found := false
		for _, r := range all {
			if r.Name == strings.TrimSpace(name) {
				out, found = append(out, r), true
			}
		}
		if !found {
			return nil, fmt.Errorf("-rules: no rule %q (-list names them)", name)
		}
	}
	return out, nil
}

func run(ctx context.Context, o options, logw io.Writer) (*conformance.Report, error) {
	if o.consumerCmd == "" {
		return nil, errors.New("-consumer-cmd is required: the command line that starts the consumer under test")
	}
	selected, err := selectRules(o.only)
	if err != nil {
		return nil, err
	}
	runID := fmt.Sprintf("%d", time.Now().UnixNano()%1_000_000_000)
	base := firstNonEmpty(o.databaseURL, os.Getenv("DATABASE_URL"), "postgres:///test?host=/var/run/postgresql")
	schema := "conformance_" + runID
	// A fresh schema the way the demo makes its own (ledger.OpenFreshSchema),
	// dropped after the run unless -keep.
	store, release, err := ledger.OpenFreshSchema(ctx, base, schema, nil)
	if err != nil {
		return nil, err
	}
	defer release()
	if !o.keep {
		defer dropSchema(context.WithoutCancel(ctx), base, schema)
	}
	dbURL, err := ledger.WithSearchPath(base, schema)
	if err != nil {
		return nil, err
	}
	if _, err := store.Migrate(ctx); err != nil {
		return nil, fmt.Errorf("migrate the ledger schema %s: %w", schema, err)
	}
	seed, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer seed.Close()
	records, err := billing.OpenRecords(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer records.Close()

	natsURL := o.natsURL
	if natsURL == "" {
		dir, err := os.MkdirTemp("", "conformance-nats-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		srv, err := natsembed.Start(dir, true)
		if err != nil {
			return nil, err
		}
		defer srv.Stop()
		natsURL = srv.ClientURL()
	}
	nc, err := nats.Connect(natsURL)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", natsURL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	if err := conformance.Streams(ctx, js); err != nil {
		return nil, err
	}

	// The consumer seals its result bodies with a keyring of the kit's, which sealed-result-body
	// opens.
	keyringDir, err := os.MkdirTemp("", "conformance-keyring-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(keyringDir)
	keyringPath := filepath.Join(keyringDir, "results.keyring")
	if err := os.WriteFile(keyringPath, []byte(seal.NewKeyLine("conformance-"+runID)+"\n"), 0o600); err != nil {
		return nil, err
	}
	keyring, err := seal.ReadKeyringFile(keyringPath)
	if err != nil {
		return nil, err
	}
	sut := &supervisor{o: o, env: []string{"NATS_URL=" + natsURL, "DATABASE_URL=" + dbURL, "REPLAYCTL_DATABASE_URL=" + dbURL,
		"REPLAYCTL_CONSUMER=" + conformance.ConsumerName, conformance.ResultKeyringEnv + "=" + keyringPath,
		conformance.ReconcileAfterEnv + "=" + conformance.ReconcileAfter.String(), conformance.ReconcileIntervalEnv + "=" + conformance.ReconcileInterval.String()}}
	defer sut.stop(logw)
	if err := sut.Start(ctx); err != nil {
		return nil, err
	}
	env := &conformance.Env{NC: nc, JS: js, Store: store, Seed: seed, Records: records, Run: runID, Process: sut, ResultKeyring: keyring}
	report := conformance.Run(ctx, env, selected, o.timeout)
	if report.Failed > 0 {
		fmt.Fprintf(logw, "conformance: the consumer under test's last output:\n%s\n", sut.tail())
	}
	return &report, nil
}

// supervisor is the consumer under test across restarts: kill-mid-call-uncertain kills it and
// starts it again (conformance.Process).
type supervisor struct {
	o options
	// env is what the consumer finds in its environment besides the kit's own.
	env           []string
	cur           *consumerProcess
	earlierOutput string
}

// Start runs the consumer's command and returns once it printed -ready.
func (s *supervisor) Start(ctx context.Context) error {
	p, err := startConsumer(s.o, s.env)
	if err != nil {
		return err
	}
	if s.cur != nil {
		s.earlierOutput += s.cur.tail() + "\n--- killed by the kit and started again ---\n"
	}
	s.cur = p
	select {
	case <-p.ready:
		return nil
	case <-p.exited:
		return fmt.Errorf("the consumer under test exited (%v) before printing %q:\n%s", p.cmd.ProcessState, s.o.ready, s.tail())
	case <-time.After(s.o.readyTimeout):
		return fmt.Errorf("the consumer under test did not print %q within %s:\n%s", s.o.ready, s.o.readyTimeout, s.tail())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Kill sends SIGKILL to the consumer's process group, as a crash or the OOM killer would.
func (s *supervisor) Kill() error {
	if err := syscall.Kill(-s.cur.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-s.cur.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the consumer's process %d did not exit within 10s of SIGKILL", s.cur.cmd.Process.Pid)
	}
}

func (s *supervisor) stop(logw io.Writer) {
	if s.cur != nil {
		s.cur.stop(logw)
	}
}

// tail is the last lines the consumer printed, across its restarts.
func (s *supervisor) tail() string {
	out := s.earlierOutput
	if s.cur != nil {
		out += s.cur.tail()
	}
	return lastLines(out, tailLines)
}

// consumerProcess is the consumer under test, in a process group of its own (a `go run` or `npx`
// starts a child that must stop with it).
type consumerProcess struct {
	cmd    *exec.Cmd
	ready  chan struct{}
	exited chan struct{}
	mu     sync.Mutex
	out    bytes.Buffer
}

func startConsumer(o options, env []string) (*consumerProcess, error) {
	p := &consumerProcess{ready: make(chan struct{}), exited: make(chan struct{})}
	p.cmd = exec.Command("sh", "-c", o.consumerCmd)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w := &readyWriter{p: p, want: o.ready}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the consumer under test: %w", err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// readyWriter keeps the consumer's output and closes ready at the first sight of want.
type readyWriter struct {
	p    *consumerProcess
	want string
	once sync.Once
}

func (w *readyWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	w.p.out.Write(b)
	if strings.Contains(w.p.out.String(), w.want) {
		w.once.Do(func() { close(w.p.ready) })
	}
	return len(b), nil
}

// tail is the last 30 lines the consumer printed.
func (p *consumerProcess) tail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return lastLines(p.out.String(), tailLines)
}

// tailLines is how much of the consumer's output a failure quotes.
const tailLines = 30

// lastLines is the last n lines of out.
func lastLines(out string, n int) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// stop interrupts the consumer's process group, as Ctrl-C would, and kills it after 10 s.
func (p *consumerProcess) stop(logw io.Writer) {
	pgid := -p.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGINT)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		fmt.Fprintln(logw, "conformance: the consumer under test ignored SIGINT for 10s; killed")
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-p.exited
	}
}

// dropSchema drops the run's schema; a failure leaves it behind, named conformance_<run>.
func dropSchema(ctx context.Context, base, schema string) {
	admin, err := pgxpool.New(ctx, base)
	if err != nil {
		return
	}
	defer admin.Close()
	_, _ = admin.Exec(ctx, "drop schema if exists "+pgx.Identifier{schema}.Sanitize()+" cascade")
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
