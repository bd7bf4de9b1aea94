package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// apiKeys is how many idempotency keys a round's API clients send, each from apiSenders
// goroutines at once and again on every answer that is not final: repeated keys, concurrent.
const (
	apiKeys    = 24
	apiSenders = 3
	apiLease   = 6 * time.Second
)

// apiState is a round's billing-api process and what its clients were told.
type apiState struct {
	addr string
	mu   sync.Mutex
	cmd  *exec.Cmd
	// final is each key's final answer: "charged" (201) or "uncertain" (the record went to
	// review); a key without one never got a final answer.
	final map[int]string
}

func apiOrderID(round, i int) string { return fmt.Sprintf("api-%d-%04d", round, i) }

// startAPI starts billing-api on the round's ledger (through the proxies, as the consumers) and
// the provider's log, and waits until it listens.
func (r *roundEnv) startAPI() error {
	if r.api == nil {
		port, err := freePort()
		if err != nil {
			return err
		}
		r.api = &apiState{addr: "127.0.0.1:" + strconv.Itoa(port), final: map[int]string{}}
	}
	logFile, err := os.OpenFile(filepath.Join(r.s.dir, fmt.Sprintf("api-%d.log", r.round)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(r.s.api, "-addr", r.api.addr, "-database-url", r.consumerURL, "-records-database-url", r.recordsURL,
		"-lease", apiLease.String(), "-reconcile-every", "0")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start billing-api: %w", err)
	}
	go func() { _ = cmd.Wait(); logFile.Close() }()
	r.api.mu.Lock()
	r.api.cmd = cmd
	r.api.mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", r.api.addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("billing-api did not listen on %s", r.api.addr)
}

func (r *roundEnv) stopAPI() {
	if r.api == nil {
		return
	}
	r.api.mu.Lock()
	defer r.api.mu.Unlock()
	if c := r.api.cmd; c != nil && c.Process != nil {
		_ = c.Process.Signal(syscall.SIGCONT)
		_ = c.Process.Kill()
	}
}

// killAPI is the fault "api-kill9": billing-api killed mid-request and started again.
func (r *roundEnv) killAPI(pause time.Duration) {
	r.api.mu.Lock()
	c := r.api.cmd
	r.api.mu.Unlock()
	if c != nil && c.Process != nil {
		_ = c.Process.Kill()
	}
	time.Sleep(pause)
	if err := r.startAPI(); err != nil {
		logf("round %d: restart billing-api: %v", r.round, err)
	}
}

// runAPIClients sends every key from apiSenders goroutines again and again while faults land
// (until faults ends: a final answer does not stop them, retries of a done key keep coming), then
// each key without a final answer until it gets one or calm ends.
func (r *roundEnv) runAPIClients(faults, calm context.Context) {
	r.sendAll(faults, false)
	r.sendAll(calm, true)
}

func (r *roundEnv) sendAll(ctx context.Context, untilFinal bool) {
	var wg sync.WaitGroup
	for i := range apiKeys {
		key := fmt.Sprintf("soak-%d-%d-%04d", r.s.o.seed, r.round, i)
		body, _ := json.Marshal(map[string]any{"orderId": apiOrderID(r.round, i), "customer": fmt.Sprintf("cus_%03d", i),
			"amountCents": 1000 + i, "currency": "EUR"})
		for range apiSenders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.send(ctx, i, key, body, untilFinal)
			}()
		}
	}
	wg.Wait()
}

func (r *roundEnv) send(ctx context.Context, i int, key string, body []byte, untilFinal bool) {
	client := &http.Client{Timeout: 10 * time.Second}
	for ctx.Err() == nil {
		r.api.mu.Lock()
		done := r.api.final[i] != ""
		r.api.mu.Unlock()
		if done && untilFinal {
			return
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.api.addr+"/v1/charges", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer demo-alice")
		req.Header.Set("Idempotency-Key", key)
		resp, err := client.Do(req)
		final := ""
		if err == nil {
			var problem struct {
				Type string `json:"type"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&problem)
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusCreated:
				final = "charged"
			case strings.HasSuffix(problem.Type, "/outcome-uncertain"):
				final = "uncertain"
			case strings.HasSuffix(problem.Type, "/key-reused"):
				r.s.violation(r.round, "api-key-reused", "key %s (order %s) answered key-reused for the request it was made for", key, apiOrderID(r.round, i))
				final = "refused"
			}
		}
		if final != "" {
			r.api.mu.Lock()
			if r.api.final[i] == "" {
				r.api.final[i] = final
			}
			r.api.mu.Unlock()
			if untilFinal {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(50+rand.IntN(250)) * time.Millisecond):
		}
	}
}

// checkAPI judges the API's orders from the provider's log: never charged twice; charged once
// when the client was told so; a key the clients never got a final answer for is a violation
// (the middleware must answer every retry, with the response or a review).
func (r *roundEnv) checkAPI(charges map[string]int) {
	for i := range apiKeys {
		order := apiOrderID(r.round, i)
		n := charges[order]
		r.api.mu.Lock()
		final := r.api.final[i]
		r.api.mu.Unlock()
		r.s.report.Checks++
		switch {
		case n > 1:
			r.s.violation(r.round, "api-charged-twice", "API order %s charged %d times (its key's final answer: %q)", order, n, final)
		case final == "charged" && n != 1:
			r.s.violation(r.round, "api-lost", "API order %s: the client was answered 201 and the provider has %d charges", order, n)
		case final == "":
			r.s.violation(r.round, "api-no-answer", "API order %s: no final answer (201, or outcome-uncertain) after the faults stopped; %d charges", order, n)
		}
	}
	r.s.report.Orders += apiKeys
}

// healAPI starts billing-api again when a fault left it dead.
func (r *roundEnv) healAPI() {
	r.api.mu.Lock()
	c := r.api.cmd
	r.api.mu.Unlock()
	if c != nil && c.Process != nil {
		_ = c.Process.Signal(syscall.SIGCONT)
	}
	if !alive(c) {
		if err := r.startAPI(); err != nil {
			logf("round %d: restart billing-api: %v", r.round, err)
		}
	}
}
