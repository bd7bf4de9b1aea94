package cli

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
)

// A rerun finishes a job whose earlier run published every target and got no outcome (its
// messages consumed by a fleet pointed at another ledger): the earlier publishes are not counted
// in flight on top of this run's republishes, so --max-in-flight 10 does not hold the rerun at 0
// of 30 until its settle timeout.
func TestARerunFinishesAJobWhoseEarlierPublishesGotNoOutcome(t *testing.T) {
	t.Parallel()
	for name, flags := range map[string]string{"window": "--canary 0 --max-in-flight 10", "canary": ""} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rerunAfterLostPublishes(t, flags)
		})
	}
}

func rerunAfterLostPublishes(t *testing.T, rerunFlags string) {
	w := newExecWorld(t)
	m := w.Shadowed(30, "job-rerun-lost")
	// A short duplicate window: the republishes are stored again, as they are after two minutes.
	w.updateBillingStream(t, func(cfg *jetstream.StreamConfig) { cfg.Duplicates = 200 * time.Millisecond })
	if _, stderr, code := w.replayctl(t, "execute --yes --canary 0 --settle-timeout 1s "+m.ID); code != cmdutil.ExitGuardStopped {
		t.Fatalf("first run without a consumer: exit %d, want 4 (nothing settles)\n%s", code, stderr)
	}
	if n := w.QueryInt(`select count(*) from job_targets where job_id = $1 and status = 'published'`, m.ID); n != 30 {
		t.Fatalf("%d targets published by the first run, want 30", n)
	}
	// What a fleet pointed at another ledger leaves: the messages gone, no outcome in this ledger.
	stream, err := w.NATS.JS.Stream(w.Ctx, exectest.Stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(w.Ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	w.replayctl(t, "resume --reason 'the consumer fleet points at this ledger again' "+m.ID)
	w.RunConsumer(w.NewConsumer(nil, nil))
	stdout, stderr, code := w.replayctl(t, "execute --yes "+rerunFlags+" --settle-timeout 10s "+m.ID)
	if code != cmdutil.ExitOK {
		t.Fatalf("rerun: exit %d, want 0\n%s\n%s", code, stdout, stderr)
	}
	w.assertChargedOnce(t, 30)
}
