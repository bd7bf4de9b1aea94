package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replayctl/replayctl/idempotency"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
)

// helperEnv carries the helper process's flags as JSON.
const helperEnv = "BILLING_API_HELPER_ARGS"

// TestHelperProcessBillingAPI is not a test: it is billing-api, run in its own process by the
// tests below so it can be killed with SIGKILL.
func TestHelperProcessBillingAPI(t *testing.T) {
	encoded := os.Getenv(helperEnv)
	if encoded == "" {
		t.Skip("helper process")
	}
	var o helperOptions
	if err := json.Unmarshal([]byte(encoded), &o); err != nil {
		t.Fatal(err)
	}
	if err := run(options{addr: "127.0.0.1:0", dbURL: o.DBURL, lease: o.Lease, reconcileEvery: o.ReconcileEvery, hangAfterCharge: o.Hang, pauseBeforeCharge: o.PauseBeforeCharge}); err != nil {
		t.Fatal(err)
	}
}

type helperOptions struct {
	DBURL                 string
	Lease, ReconcileEvery time.Duration
	Hang                  bool
	PauseBeforeCharge     time.Duration
}

// lockedBuffer is the process's stderr, written by its reader and read by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type apiProcess struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	addr   chan string
	url    string
	done   chan struct{}
}

var servingLine = regexp.MustCompile(`serving POST http://([0-9.:]+)/v1/charges`)

func startAPI(t *testing.T, o helperOptions) *apiProcess {
	t.Helper()
	encoded, _ := json.Marshal(o)
	p := &apiProcess{stderr: &lockedBuffer{}, addr: make(chan string, 1), done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "-test.run=^TestHelperProcessBillingAPI$", "-test.count=1")
	p.cmd.Env = append(os.Environ(), helperEnv+"="+string(encoded))
	out, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout = io.Discard
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.stderr.WriteString(sc.Text() + "\n")
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				p.addr <- m[1]
			}
		}
		_ = p.cmd.Wait()
	}()
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.done })
	select {
	case addr := <-p.addr:
		p.url = "http://" + addr + "/v1/charges"
	case <-p.done:
		t.Fatalf("billing-api exited before serving:\n%s", p.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("billing-api did not start:\n%s", p.stderr)
	}
	return p
}

// chargesOf counts the provider's charges of order, from its own log.
func chargesOf(t *testing.T, pool *pgxpool.Pool, order string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), `select count(*) from billing_provider_charges where order_id = $1`, order).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func post(t *testing.T, url, key string, body []byte, timeout time.Duration) (*http.Response, []byte, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer demo-alice")
	req.Header.Set(idempotency.KeyHeader, key)
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b, nil
}

// TestAKillAfterTheProviderCallLeavesTheRecordUncertainAndARetryIsNotCharged kills the API
// process with SIGKILL between the provider's charge and the stored response, then retries the
// request against a new process: it must not be charged again, and the reconcile worker's
// look-up settles the record so the retry learns the charge happened.
func TestAKillAfterTheProviderCallLeavesTheRecordUncertainAndARetryIsNotCharged(t *testing.T) {
	store, dbURL := pgtest.LedgerWithURL(t)
	pool := pgtest.Pool(t, store)
	body, _ := json.Marshal(billing.Order{OrderID: "ord-kill", Customer: "c", AmountCents: 4200, Currency: "EUR"})
	charges := func() int { return chargesOf(t, pool, "ord-kill") }

	first := startAPI(t, helperOptions{DBURL: dbURL, Lease: time.Second, Hang: true})
	go func() { _, _, _ = post(t, first.url, "k-kill", body, time.Minute) }()
	pgtest.WaitFor(t, 20*time.Second, func() (bool, error) {
		return strings.Contains(first.stderr.String(), "hanging before the response"), nil
	})
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.done
	if n := charges(); n != 1 {
		t.Fatalf("charges after the kill: %d, want 1", n)
	}

	second := startAPI(t, helperOptions{DBURL: dbURL, Lease: time.Second, ReconcileEvery: time.Hour})
	time.Sleep(1200 * time.Millisecond) // the dead process's lease lapses
	resp, got, err := post(t, second.url, "k-kill", body, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(got), "outcome-uncertain") || charges() != 1 {
		t.Fatalf("retry after the kill: %d %s, charges %d", resp.StatusCode, got, charges())
	}

	third := startAPI(t, helperOptions{DBURL: dbURL, Lease: time.Second, ReconcileEvery: 100 * time.Millisecond})
	pgtest.WaitFor(t, 20*time.Second, func() (bool, error) {
		var state string
		err := pool.QueryRow(t.Context(), `select state from api_keys`).Scan(&state)
		return state == "reconciled", err
	})
	resp, got, err = post(t, third.url, "k-kill", body, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var p idempotency.Problem
	_ = json.Unmarshal(got, &p)
	if resp.StatusCode != http.StatusGone || !strings.HasPrefix(p.ExternalRef, "ch_") || charges() != 1 {
		t.Fatalf("retry after reconcile: %d %s, charges %d", resp.StatusCode, got, charges())
	}
	if err := third.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-third.done
	if !strings.Contains(third.stderr.String(), "billing-api: stopped; the payment provider received 0 calls") {
		t.Fatalf("last line on SIGINT:\n%s", third.stderr)
	}
}

// TestAProcessFrozenMidCallPastTheLookUpIsChargedOnce freezes an API process with SIGSTOP after
// its call-started mark and before its charge, past its lease; another instance's retry makes the
// record uncertain and its reconcile worker finds no charge and settles it not_happened. The
// frozen process resumes and charges: its answer corrects the verdict, and a retry after it, and
// one let through before it, are never a second charge (the operation ID is the provider's own
// idempotency key).
func TestAProcessFrozenMidCallPastTheLookUpIsChargedOnce(t *testing.T) {
	store, dbURL := pgtest.LedgerWithURL(t)
	pool := pgtest.Pool(t, store)
	body, _ := json.Marshal(billing.Order{OrderID: "ord-frozen", Customer: "c", AmountCents: 4200, Currency: "EUR"})
	charges := func() int { return chargesOf(t, pool, "ord-frozen") }
	state := func() (s string) {
		_ = pool.QueryRow(t.Context(), `select state || coalesce(' ' || resolution, '') from api_keys`).Scan(&s)
		return s
	}

	frozen := startAPI(t, helperOptions{DBURL: dbURL, Lease: time.Second, PauseBeforeCharge: 2 * time.Second})
	answered := make(chan []byte, 1)
	go func() {
		resp, got, err := post(t, frozen.url, "k-frozen", body, time.Minute)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Errorf("the frozen request, resumed: %v %s", err, got)
		}
		answered <- got
	}()
	pgtest.WaitFor(t, 20*time.Second, func() (bool, error) {
		return strings.Contains(frozen.stderr.String(), "pausing"), nil
	})
	if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = frozen.cmd.Process.Signal(syscall.SIGCONT) })

	other := startAPI(t, helperOptions{DBURL: dbURL, Lease: time.Second, ReconcileEvery: 100 * time.Millisecond})
	time.Sleep(1200 * time.Millisecond) // the frozen process's lease lapses: its heartbeat is frozen too
	if resp, got, err := post(t, other.url, "k-frozen", body, 10*time.Second); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("retry while frozen: %v %s", err, got)
	}
	pgtest.WaitFor(t, 20*time.Second, func() (bool, error) { return state() == "reconciled not_happened", nil })
	if n := charges(); n != 0 {
		t.Fatalf("charges before the resume: %d", n)
	}

	if err := frozen.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	first := <-answered
	if got := state(); got != "completed" || charges() != 1 {
		t.Fatalf("after the resumed charge: record %q, charges %d", got, charges())
	}
	// The process logs before it answers, but its stderr reaches the test through a pipe the test
	// reads on its own goroutine: the line may land just after the response.
	func() {
		defer func() {
			if t.Failed() {
				t.Logf("the operator was not told the verdict was corrected:\n%s", frozen.stderr)
			}
		}()
		pgtest.WaitFor(t, 5*time.Second, func() (bool, error) {
			return strings.Contains(frozen.stderr.String(), "not_happened verdict was wrong"), nil
		})
	}()
	resp, got, err := post(t, other.url, "k-frozen", body, 10*time.Second)
	if err != nil || resp.StatusCode != http.StatusCreated || !bytes.Equal(got, first) || charges() != 1 {
		t.Fatalf("retry after the resume: %v %d %s (first %s), charges %d", err, resp.StatusCode, got, first, charges())
	}
}
