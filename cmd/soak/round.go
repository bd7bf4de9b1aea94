package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/dlq"
)

const (
	settleTimeout = 20 * time.Second
	// hangMargin is how far past its settle timeout an execute may run before it counts as hung.
	hangMargin = 60 * time.Second
	// maxExecutes bounds the executes of one round's job while faults land; calmExecutes those
	// after: a job that cannot finish in them is a violation.
	maxExecutes  = 8
	calmExecutes = 3
	appName      = "replayctl-soak"
	// commandTimeout bounds plan, shadow, status, resume and reconcile: none of them should take
	// a minute on a round's 120 orders.
	commandTimeout = 2 * time.Minute
	reason         = "soak: payment provider outage fixed; replay the refused charges"
)

// roundEnv is one round's world: a schema, the streams, the consumer processes.
type roundEnv struct {
	s      *soak
	round  int
	schema string
	url    string
	pool   *pgxpool.Pool
	// records is the provider's log, on -database-url in a schema of the round's: a failover of
	// the ledger cannot take it along (it stands for the provider's own system).
	records    *pgxpool.Pool
	recordsURL string
	mu         sync.Mutex
	consumers  []*exec.Cmd
	execute    *exec.Cmd
	rng        *rand.Rand
	// pair is the round's private primary and replica (-failover), nil on -database-url.
	pair *pgPair
	menu []string
	// links are the proxies between the consumers and the ledger and NATS; consumerURL and
	// consumerNATS reach the servers through them.
	links                     links
	consumerURL, consumerNATS string
	// api is the round's billing-api and what its clients were told.
	api *apiState
}

func (s *soak) round(round int) error {
	ctx := context.Background()
	r := &roundEnv{s: s, round: round, schema: fmt.Sprintf("soak_%d_%d", os.Getpid(), round),
		rng: rand.New(rand.NewPCG(uint64(s.o.seed), uint64(round)))}
	dbURL := s.o.dbURL
	r.menu = append(slices.Clone(faultKinds), "api-kill9")
	if s.o.natsCluster {
		r.menu = append(r.menu, "nats-leader-kill9-restart")
	}
	if s.o.failover != "off" {
		// A directory of its own under the temp dir: the servers run as the postgres user, who
		// cannot enter the soak's own (root's, mode 0700).
		pgDir, err := os.MkdirTemp("", "replayctl-soak-pg-")
		if err != nil {
			return err
		}
		pair, err := newPGPair(pgDir, s.o.failover == "sync")
		if err != nil {
			return err
		}
		defer pair.stop()
		r.pair, dbURL = pair, pair.url()
		r.menu = append(r.menu, "ledger-failover", "ledger-restart")
	}
	var err error
	if r.pool, err = pgxpool.New(ctx, dbURL); err != nil {
		return err
	}
	if r.records, err = pgxpool.New(ctx, s.o.dbURL); err != nil {
		return err
	}
	defer r.records.Close()
	if _, err := r.records.Exec(ctx, "create schema "+r.schema+"_provider"); err != nil {
		return err
	}
	defer r.records.Exec(context.Background(), "drop schema if exists "+r.schema+"_provider cascade")
	r.recordsURL = withParams(s.o.dbURL, "search_path="+r.schema+"_provider")
	defer r.pool.Close()
	if _, err := r.pool.Exec(ctx, "create schema "+r.schema); err != nil {
		return err
	}
	defer r.pool.Exec(context.Background(), "drop schema if exists "+r.schema+" cascade")
	r.url = withParams(dbURL, "search_path="+r.schema, "application_name="+appName)
	r.consumerURL, r.consumerNATS = r.url, r.s.nats.url()
	if s.o.links {
		defer r.stopLinks()
		if r.consumerURL, r.consumerNATS, err = r.startLinks(dbURL); err != nil {
			return fmt.Errorf("start the fault proxies: %w", err)
		}
		r.menu = append(r.menu, linkFaultKinds...)
	}
	if out, err := r.replayctl("migrate"); err != nil {
		return fmt.Errorf("migrate: %v %s", err, out)
	}
	if err := r.streams(ctx); err != nil {
		return err
	}
	defer r.stopConsumers()
	for i := range s.o.consumers {
		if err := r.startConsumer(i); err != nil {
			return err
		}
	}
	time.Sleep(time.Second)
	planArgs := []string{"plan", "--json", "--new-consumer", "--consumer", "billing", "--stream", "DLQ_BILLING", "--reason", reason,
		"-o", filepath.Join(s.dir, fmt.Sprintf("job-%d.json", round)), "--force"}
	// One round in three interrupts its first plan, and one in three its first shadow, at a
	// random moment: what an operator does next (run it again) must work.
	interrupted := r.interruptMaybe("plan-sigint", planArgs...)
	out, err := r.replayctl(planArgs...)
	if err != nil && interrupted {
		// The interrupted plan may have recorded its job: plan refuses the same targets again and
		// says to finish or cancel it first, which is what an operator does.
		r.cancelUnfinished()
		out, err = r.replayctl(planArgs...)
	}
	if err != nil {
		return fmt.Errorf("plan: %v\n%s", err, out)
	}
	var plan struct {
		JobID string `json:"jobId"`
	}
	if err := json.Unmarshal(out, &plan); err != nil {
		return fmt.Errorf("plan output: %v\n%s", err, out)
	}
	r.interruptMaybe("shadow-sigint", "shadow", "--max-calls-over", "1", plan.JobID)
	if out, err := r.replayctl("shadow", "--max-calls-over", "1", plan.JobID); err != nil {
		return fmt.Errorf("shadow: %v\n%s", err, out)
	}
	// Faults land while execute runs, up to maxExecutes attempts, and while API clients send
	// their keys again and again; then, as an operator after an incident, the job must finish in
	// a few fault-free runs, and every key get a final answer.
	if err := r.startAPI(); err != nil {
		return err
	}
	defer r.stopAPI()
	faulting, endFaults := context.WithCancel(ctx)
	calm, endCalm := context.WithTimeout(ctx, 10*time.Minute)
	defer endCalm()
	clients := make(chan struct{})
	go func() { r.runAPIClients(faulting, calm); close(clients) }()
	stop := r.startFaults()
	finished := r.executeUntilDone(plan.JobID, maxExecutes)
	stop()
	r.healConsumers()
	r.healAPI()
	endFaults()
	if !finished {
		time.Sleep(time.Second)
		if finished = r.executeUntilDone(plan.JobID, calmExecutes); !finished {
			r.s.violation(r.round, "job-cannot-finish", "job %s did not finish in %d executes after the faults stopped (logs in execute-%d-*.log)",
				plan.JobID, calmExecutes, round)
		}
	}
	if finished {
		logf("round %d: waiting for the job's rows to settle, then checking", round)
		r.waitSettled(plan.JobID)
	}
	// The calm phase's answers: a minute at most for a key still without one.
	select {
	case <-clients:
	case <-time.After(time.Minute):
		endCalm()
		<-clients
	}
	return r.check(ctx, plan.JobID)
}

// streams (re)creates the billing stream and its DLQ, and seeds the DLQ with the round's orders
// as natscli-compatible dead letters.
func (r *roundEnv) streams(ctx context.Context) error {
	nc, err := nats.Connect(r.s.nats.url())
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	// A cluster whose node was killed late in the last round may still be electing leaders:
	// its streams are made again until it answers, for a minute at most.
	deadline := time.Now().Add(time.Minute)
	for name, subject := range map[string]string{"BILLING": "billing.>", "DLQ_BILLING": "dlq.billing.>"} {
		for {
			err := js.DeleteStream(ctx, name)
			if err == nil || errors.Is(err, jetstream.ErrStreamNotFound) {
				_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Replicas: r.s.nats.replicas()})
			}
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("make stream %s: %w", name, err)
			}
			time.Sleep(time.Second)
		}
	}
	for i := range r.s.o.orders {
		body, _ := json.Marshal(map[string]any{"orderId": orderID(r.round, i), "customer": fmt.Sprintf("cus_%03d", i%97),
			"amountCents": 500 + r.rng.IntN(20000), "currency": "EUR"})
		m := dlq.DeadLetter{Subject: "dlq.billing.charge", EventID: eventID(r.round, i), OriginalSubject: "billing.charge.requested",
			Class: "payment provider unavailable", Attempts: 5, FailedAt: time.Now(), Payload: body}.Msg()
		for attempt := 1; ; attempt++ {
			_, err := js.PublishMsg(ctx, m)
			if err == nil {
				break
			}
			if attempt == 30 {
				return fmt.Errorf("seed the DLQ: %w", err)
			}
			time.Sleep(time.Second)
		}
	}
	return nil
}

func orderID(round, i int) string { return fmt.Sprintf("ord-%d-%04d", round, i) }
func eventID(round, i int) string { return fmt.Sprintf("evt-%d-%04d", round, i) }

// replayctl runs replayctl with the round's ledger and NATS server and returns its stdout.
func (r *roundEnv) replayctl(args ...string) ([]byte, error) {
	// Every command here is short; one that outlives commandTimeout hangs, and that is a finding.
	cmd := r.replayctlCmd(args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	timer := time.AfterFunc(commandTimeout, func() {
		r.s.violation(r.round, "command-hang", "replayctl %s ran past %s", strings.Join(args, " "), commandTimeout)
		_ = cmd.Process.Kill()
	})
	out, err := cmd.Output()
	timer.Stop()
	if err != nil {
		return out, fmt.Errorf("replayctl %s: %w: %s", args[0], err, stderr.String())
	}
	return out, nil
}

func (r *roundEnv) replayctlCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(r.s.replayctl, append(args, "--database-url", r.url, "--nats-url", r.s.nats.url(), "--actor", "soak")...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+r.s.dir)
	return cmd
}

// executeUntilDone runs execute until the job is done, as an operator would after each fault:
// resume what a guard paused, run execute again. It reports whether the job finished.
func (r *roundEnv) executeUntilDone(jobID string, attempts int) bool {
	for attempt := 1; attempt <= attempts; attempt++ {
		// A paced run lasts long enough for faults to land in it: 2 to 8 s for the round's orders.
		rate := max(10, r.s.o.orders/(2+r.rng.IntN(7)))
		cmd := r.replayctlCmd("execute", "--yes", "--settle-timeout", settleTimeout.String(), "--progress-interval", "0",
			"--rate", fmt.Sprint(rate), jobID)
		logFile, _ := os.OpenFile(filepath.Join(r.s.dir, fmt.Sprintf("execute-%d-%d.log", r.round, attempt)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		started := time.Now()
		r.mu.Lock()
		err := cmd.Start()
		r.execute = cmd
		r.mu.Unlock()
		if err != nil {
			logFile.Close()
			return false
		}
		err = cmd.Wait()
		logFile.Close()
		r.mu.Lock()
		r.execute = nil
		r.mu.Unlock()
		if took := time.Since(started); took > settleTimeout+hangMargin {
			r.s.violation(r.round, "execute-hang", "execute attempt %d of job %s ran %s, past --settle-timeout %s", attempt, jobID, took.Round(time.Second), settleTimeout)
		}
		code := exitCode(err)
		logf("round %d: execute attempt %d exited %d after %s", r.round, attempt, code, time.Since(started).Round(100*time.Millisecond))
		if code == 0 || code == 5 {
			return true
		}
		if status := r.jobStatus(jobID); status == "completed" {
			return true
		}
		r.replayctl("resume", "--reason", "soak: continue after a fault", jobID)
		time.Sleep(500 * time.Millisecond)
	}
	return false
}

func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

func (r *roundEnv) jobStatus(jobID string) string {
	out, err := r.replayctl("status", "--json", jobID)
	if err != nil {
		return ""
	}
	var st struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(out, &st)
	return st.Status
}

// waitSettled waits until no target is in progress, for the checker to read settled rows.
func (r *roundEnv) waitSettled(jobID string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, err := r.replayctl("status", "--json", jobID)
		var st struct {
			Counts struct {
				InProgress int64 `json:"inProgress"`
			} `json:"counts"`
		}
		if err == nil && json.Unmarshal(out, &st) == nil && st.Counts.InProgress == 0 {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func withParams(url string, params ...string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + strings.Join(params, "&")
}

// interruptMaybe runs replayctl args and sends it SIGINT 20 to 600 ms in, in one round of three
// (kind is the fault's name), and waits for it to stop: its exit is not judged, what comes after
// it is.
func (r *roundEnv) interruptMaybe(kind string, args ...string) bool {
	if r.rng.IntN(3) != 0 {
		return false
	}
	cmd := r.replayctlCmd(args...)
	if err := cmd.Start(); err != nil {
		return false
	}
	time.Sleep(time.Duration(20+r.rng.IntN(580)) * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(commandTimeout):
		r.s.violation(r.round, "command-hang", "replayctl %s did not stop within %s of SIGINT", args[0], commandTimeout)
		_ = cmd.Process.Kill()
		<-done
	}
	r.s.fault(kind)
	logf("round %d: fault %s", r.round, kind)
	return true
}

// cancelUnfinished cancels the billing consumer's jobs that have not finished.
func (r *roundEnv) cancelUnfinished() {
	out, _ := r.replayctl("jobs", "--consumer", "billing", "--json")
	var jobs struct {
		Items []struct {
			JobID  string `json:"jobId"`
			Status string `json:"status"`
		} `json:"items"`
	}
	_ = json.Unmarshal(out, &jobs)
	for _, j := range jobs.Items {
		if j.Status != "completed" && j.Status != "cancelled" {
			_, _ = r.replayctl("cancel", j.JobID, "--reason", "soak: its plan was interrupted; planning again")
			logf("round %d: cancelled job %s (%s), left by an interrupted plan", r.round, j.JobID, j.Status)
		}
	}
}
