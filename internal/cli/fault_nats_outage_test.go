package cli

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/internal/testenv/slowtest"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/protocol"
)

// natsOutage is longer than a publish's acknowledgement timeout (10 s), so every publish in flight
// when the server went away fails, though many of them reach the stream once it is back.
const natsOutage = 12 * time.Second

// TestFaultNATSOutageLongerThanTheAckTimeoutRecoversInSeconds: issue 16 item 1. Before, each
// failed publish was retried on its own, a second and more apart and without asking the ledger:
// execute took minutes after the server came back, and published again targets that were already
// completed. A 1 s dedup window on the stream stands for an outage longer than JetStream's default
// 2 minutes, after which a publish sent again is stored again.
func TestFaultNATSOutageLongerThanTheAckTimeoutRecoversInSeconds(t *testing.T) {
	slowtest.Require(t)
	// Waits on timeouts and restarts in a world of its own: runs beside the others.
	t.Parallel()
	const n, rate, completedAtOutage = 300, 50, 60
	w := newFaultWorld(t)
	m := w.Shadowed(n, "job-fault-nats-outage")
	w.updateBillingStream(t, func(cfg *jetstream.StreamConfig) { cfg.Duplicates = time.Second })
	w.logLedgerOnFailure(t, m)
	w.RunConsumer(w.NewConsumer(nil, nil))

	p := startReplayctl(t, w.executeArgs("--rate", fmt.Sprint(rate))...)
	w.waitCompleted(t, p, m, completedAtOutage)
	w.NATS.Restart(t, natsOutage)
	restarted := time.Now()
	code := p.wait(t, 10*time.Minute)
	recovery := time.Since(restarted)
	// What is left after the restart is publishing the rest at --rate and their processing; the
	// retries of the publishes the outage failed must fit beside it, not add a second per target.
	bound := time.Duration(n-completedAtOutage)*time.Second/rate + 20*time.Second
	t.Logf("restart to exit: %s (bound %s); %d messages on the stream for %d targets", recovery.Round(100*time.Millisecond), bound, w.StreamMessages(), n)
	for _, line := range strings.Split(p.stdout.String(), "\n") {
		if strings.Contains(line, "retried") || strings.Contains(line, "not sent again") || strings.Contains(line, "deduplicated") {
			t.Logf("report: %s", strings.TrimSpace(line))
		}
	}
	if code != cmdutil.ExitOK {
		t.Fatalf("execute exited %d, want 0:\n%s", code, p.outputOf())
	}
	if recovery > bound {
		t.Errorf("execute took %s from the restart to its exit, want under %s:\n%s", recovery.Round(time.Second), bound, p.outputOf())
	}
	w.assertReconnected(t)
	// The outage and its end are in the log as they happened, not only in the final report.
	stderr := p.stderr.String()
	if !regexp.MustCompile(`Z NATS connection to nats://127\.0\.0\.1:\d+ lost: .+; reconnecting\n`).MatchString(stderr) ||
		!regexp.MustCompile(`Z NATS reconnected to nats://127\.0\.0\.1:\d+ after \d+(\.\d)?s\n`).MatchString(stderr) {
		t.Errorf("stderr does not log the lost connection and the reconnect as they happened:\n%s", stderr)
	}
	w.assertChargedOnce(t, n)
	if s := w.JobStatus(m.ID); s != "completed" {
		t.Errorf("job %s, want completed", s)
	}
	w.assertNoCopyAfterOutcome(t, m)
}

// updateBillingStream changes the billing stream's configuration.
func (w *execWorld) updateBillingStream(t *testing.T, change func(*jetstream.StreamConfig)) {
	t.Helper()
	s, err := w.NATS.JS.Stream(w.Ctx, exectest.Stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	change(&cfg)
	if _, err := w.NATS.JS.UpdateStream(w.Ctx, cfg); err != nil {
		t.Fatal(err)
	}
}

// assertNoCopyAfterOutcome fails when the billing stream holds a replay of one of m's targets
// stored after that target's outcome was recorded in the ledger: "a target already done under the
// new version is never published again". A copy stored before the outcome (published again while
// its first copy waited for the consumer) is allowed; the ledger answers it without a charge.
func (w *execWorld) assertNoCopyAfterOutcome(t *testing.T, m *manifest.Manifest) {
	t.Helper()
	done := map[string]time.Time{}
	rows, err := w.DB.Query(w.Ctx, `select event_id, updated_at from effects
		where consumer = $1 and effect_version = $2 and job_id = $3 and state = 'completed'`, m.Consumer, m.EffectVersion.To, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			t.Fatal(err)
		}
		done[id] = at
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	stored := w.replaysStored(t, m.ID)
	var late []string
	copies := 0
	for id, ats := range stored {
		copies += len(ats) - 1
		for _, at := range ats[1:] {
			if outcome, ok := done[id]; ok && at.After(outcome) {
				late = append(late, fmt.Sprintf("%s stored again at %s, %s after its outcome", id, at.Format("15:04:05.000"), at.Sub(outcome).Round(time.Millisecond)))
			}
		}
	}
	sort.Strings(late)
	t.Logf("%d targets on the stream, %d second copies, %d stored after the target's outcome", len(stored), copies, len(late))
	if len(late) > 0 {
		t.Errorf("%d targets published again after their outcome was in the ledger, e.g. %v", len(late), late[:min(len(late), 5)])
	}
}

// replaysStored reads the billing stream's replays of job jobID: for each event, when each copy
// was stored, in order.
func (w *execWorld) replaysStored(t *testing.T, jobID string) map[string][]time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(w.Ctx, 30*time.Second)
	defer cancel()
	c, err := w.NATS.JS.OrderedConsumer(ctx, exectest.Stream, jetstream.OrderedConsumerConfig{HeadersOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string][]time.Time{}
	for total := w.StreamMessages(); total > 0; {
		batch, err := c.Fetch(int(min(total, 500)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for msg := range batch.Messages() {
			got++
			meta, err := msg.Metadata()
			if err != nil {
				t.Fatal(err)
			}
			if msg.Headers().Get(protocol.HeaderReplayJob) == jobID {
				id := msg.Headers().Get(protocol.HeaderEventID)
				stored[id] = append(stored[id], meta.Timestamp)
			}
		}
		if err := batch.Error(); err != nil {
			t.Fatal(err)
		}
		if got == 0 {
			t.Fatal("reading the billing stream: a fetch returned nothing before its end")
		}
		total -= uint64(got)
	}
	return stored
}
