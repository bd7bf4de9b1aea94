package cli

import (
	"strings"
	"testing"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/cmdutil"
)

// status shows each consumer instance's share of the job by lease owner and the durable's counts
// from JetStream; with NATS unreachable it still answers, with a note instead of the counts.
func TestStatusShowsEachInstancesShareAndTheDurable(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	const n = 30
	m := w.Shadowed(n, "job-cli-status-fleet")
	for _, owner := range []string{"billing-a", "billing-b"} {
		w.RunConsumer(w.NewConsumer(nil, func(cfg *consumer.Config) { cfg.Owner, cfg.Concurrency = owner, 1 }))
	}
	if stdout, stderr, code := w.replayctl(t, "execute --yes --canary 0 "+w.ManifestPath()); code != cmdutil.ExitOK {
		t.Fatalf("execute: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	r := w.statusJSON(t, m.ID)
	var total int64
	for _, s := range r.Instances {
		if s.Owner != "billing-a" && s.Owner != "billing-b" {
			t.Errorf("share of an unknown owner %q: %+v", s.Owner, s)
		}
		if s.InProgress+s.Lapsed+s.Uncertain != 0 {
			t.Errorf("a finished job's share holds leases: %+v", s)
		}
		total += s.Completed
	}
	if total != n || len(r.Instances) == 0 {
		t.Fatalf("shares %+v complete %d of %d targets", r.Instances, total, n)
	}
	if d := r.Durable; d == nil || d.Stream != "BILLING" || d.Name != m.Consumer || d.Pending != 0 || d.AckPending != 0 || d.WaitingPulls == 0 {
		t.Fatalf("durable %+v (note %q), want BILLING's %s drained with the instances pulling", d, r.DurableNote, m.Consumer)
	}

	stdout, stderr, code := w.replayctl(t, "status "+m.ID)
	for _, want := range []string{"consumer instances (lease owners)", "OLDEST LEASE", "durable billing on BILLING: 0 pending, 0 ack pending"} {
		if code != cmdutil.ExitOK || !strings.Contains(stdout, want) {
			t.Errorf("status (exit %d) lacks %q:\n%s\n%s", code, want, stdout, stderr)
		}
	}

	// The server gone: the ledger part is the same, the durable's part a note.
	w.NATS.Server.Shutdown()
	stdout, stderr, code = w.replayctl(t, "status --json "+m.ID)
	if code != cmdutil.ExitOK || !strings.Contains(stdout, `"durableNote": "the durable's counts are left out: NATS is unreachable`) ||
		!strings.Contains(stdout, `"owner": "billing-`) {
		t.Fatalf("status with NATS down: exit %d:\n%s\n%s", code, stdout, stderr)
	}
}
