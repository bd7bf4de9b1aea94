package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/internal/testenv/slowtest"
	"github.com/replayctl/replayctl/ledger"
)

// consumerHelperEnv carries a consumerHelperConfig (JSON) to TestHelperProcessStuckConsumer.
const consumerHelperEnv = "REPLAYCTL_STUCK_CONSUMER"

// consumerHelperConfig is where the stuck consumer runs.
type consumerHelperConfig struct {
	DatabaseURL string        `json:"databaseUrl"`
	NATSURL     string        `json:"natsUrl"`
	Lease       time.Duration `json:"lease"`
}

// chargedLine is what the stuck consumer prints once its external call is made.
var chargedLine = regexp.MustCompile(`(?m)^CHARGED (\S+) event (\S+)$`)

// TestHelperProcessStuckConsumer is not a test: run by startStuckConsumer as a subprocess, it is
// the billing consumer (one message at a time) whose handler makes the charge, prints it, then
// hangs while its lease is heartbeated, until the process is killed. Without the variable it
// does nothing.
func TestHelperProcessStuckConsumer(t *testing.T) {
	t.Parallel()
	raw := os.Getenv(consumerHelperEnv)
	if raw == "" {
		return
	}
	var cfg consumerHelperConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "stuck consumer: $%s: %v\n", consumerHelperEnv, err)
		os.Exit(2)
	}
	ctx := context.Background()
	store, err := ledger.Open(ctx, cfg.DatabaseURL)
	if err == nil {
		var nc *nats.Conn
		if nc, err = nats.Connect(cfg.NATSURL); err == nil {
			err = runStuckConsumer(ctx, store, nc, cfg.Lease)
		}
	}
	fmt.Fprintf(os.Stderr, "stuck consumer: %v\n", err)
	os.Exit(1)
}

func runStuckConsumer(ctx context.Context, store *ledger.Store, nc *nats.Conn, lease time.Duration) error {
	c, err := consumer.New(consumer.Config{Name: exectest.Consumer, Store: store, Conn: nc, Stream: exectest.Stream,
		DLQSubject: exectest.DLQSubject, Lease: lease, Concurrency: 1, Owner: fmt.Sprintf("stuck-%d", os.Getpid()),
		Handler: func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
			var o billing.Order
			if err := json.Unmarshal(ev.Payload, &o); err != nil {
				return consumer.Result{}, consumer.Business(err)
			}
			if _, err := fx.Call(ctx, billing.EffectCharge, billing.TargetCharge, func(context.Context) (string, error) {
				fmt.Printf("CHARGED %s event %s\n", o.OrderID, ev.ID)
				return "ch_stuck_" + o.OrderID, nil
			}); err != nil {
				return consumer.Result{}, err
			}
			select {} // the process hangs here, its lease heartbeated, until it is killed
		}})
	if err != nil {
		return err
	}
	if _, err := c.EnsureDurable(ctx); err != nil {
		return err
	}
	fmt.Println("READY")
	return c.Run(ctx)
}

// startStuckConsumer runs TestHelperProcessStuckConsumer on w, and waits until its durable exists.
func startStuckConsumer(t *testing.T, w *execWorld, lease time.Duration) *replayctlProcess {
	t.Helper()
	cfg, err := json.Marshal(consumerHelperConfig{DatabaseURL: w.DatabaseURL, NATSURL: w.NATS.Server.ClientURL(), Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	p := startHelperProcess(t, "TestHelperProcessStuckConsumer", consumerHelperEnv+"="+string(cfg))
	waitUntil(t, 30*time.Second, "the stuck consumer to start", func() bool {
		if !p.running() {
			t.Fatalf("the stuck consumer exited:\n%s", p.outputOf())
		}
		return strings.Contains(p.stdout.String(), "READY")
	})
	return p
}

// killed9 kills p with SIGKILL and checks that is how it ended.
func killed9(t *testing.T, p *replayctlProcess) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 10*time.Second)
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the process was not killed by SIGKILL: %v\n%s", p.cmd.ProcessState, p.outputOf())
	}
}

func TestFaultConsumerKilledHoldingALeaseLeavesItsEventUncertain(t *testing.T) {
	slowtest.Require(t)
	// Waits on timeouts and restarts in a world of its own: runs beside the others.
	t.Parallel()
	const n = 20
	const lease = 2 * time.Second
	w := newExecWorld(t)
	m := w.Shadowed(n, "job-fault-lease")
	stuck := startStuckConsumer(t, w, lease)
	p := startReplayctl(t, w.executeArgs()...)

	var order, event string
	waitUntil(t, 30*time.Second, "the stuck consumer's charge", func() bool {
		if got := chargedLine.FindStringSubmatch(stuck.stdout.String()); got != nil {
			order, event = got[1], got[2]
			return true
		}
		return false
	})
	// It holds the lease, heartbeated, after a call started.
	row := func() (state string, calls int64, live bool) {
		if err := w.DB.QueryRow(w.Ctx, `select state, calls_started, coalesce(lease_expires_at > now(), false) from effects
			where consumer = $1 and event_id = $2 and effect_version = $3`, m.Consumer, event, m.EffectVersion.To).Scan(&state, &calls, &live); err != nil {
			t.Fatal(err)
		}
		return state, calls, live
	}
	time.Sleep(lease) // a heartbeat or more extends the lease past its first expiry
	if state, calls, live := row(); state != "processing" || calls != 1 || !live {
		t.Fatalf("the stuck consumer's row of %s: %s, %d calls started, lease live %v; want processing, 1, true\n%s", event, state, calls, live, stuck.outputOf())
	}
	if charges := chargedLine.FindAllString(stuck.stdout.String(), -1); len(charges) != 1 {
		t.Fatalf("the stuck consumer made %d charges, want 1 (it hangs after its first): %v", len(charges), charges)
	}
	killed9(t, stuck)
	waitUntil(t, 3*lease, "the killed consumer's lease to lapse", func() bool {
		_, _, live := row()
		return !live
	})
	if s, _, _ := row(); s != "processing" {
		t.Fatalf("the lapsed row of %s is %s before any consumer looked at it, want processing", event, s)
	}

	// Another instance takes over the stream; JetStream redelivers the stuck message to it.
	w.RunConsumer(w.NewConsumer(nil, func(c *consumer.Config) { c.Lease = lease }))
	code := p.wait(t, 60*time.Second)
	if code != cmdutil.ExitNeedsReview {
		t.Fatalf("the executor exited %d, want 5 (an uncertain target):\n%s", code, p.outputOf())
	}
	if state, _, _ := row(); state != "uncertain" {
		t.Errorf("%s is %s after the take-over, want uncertain", event, state)
	}
	if got := w.Provider.Charges(order); got != 0 {
		t.Errorf("%s (charged by the killed consumer) was charged %d more times: the lapsed lease was re-run blindly", order, got)
	}
	for want := range strings.SplitSeq(fmt.Sprintf("execute of job %s: completed|uncertain\t1|completed\t%d|%s", m.ID, n-1, event), "|") {
		if !strings.Contains(p.stdout.String(), want) {
			t.Errorf("the executor's output lacks %q:\n%s", want, p.stdout.String())
		}
	}
	for i := range n {
		if o := exectest.Order(i).OrderID; o != order && w.Provider.Charges(o) != 1 {
			t.Errorf("%s charged %d times, want once", o, w.Provider.Charges(o))
		}
	}
	r := w.statusJSON(t, m.ID)
	if len(r.Uncertain) != 1 || r.Uncertain[0].EventID != event {
		t.Errorf("status lists uncertain %+v, want only %s", r.Uncertain, event)
	}
}
