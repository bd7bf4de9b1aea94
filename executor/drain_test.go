package executor_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
)

func dlqMessages(t *testing.T, e *exectest.Env) uint64 {
	t.Helper()
	s, err := e.NATS.JS.Stream(e.Ctx, exectest.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// TestDrainLeavesTheDLQWithWhatIsLeft: after a job completed, drain deletes its targets' DLQ
// messages (every copy), so the DLQ holds only what arrived since, and the next plan finds that.
func TestDrainLeavesTheDLQWithWhatIsLeft(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	e.Seed(10)
	e.PublishDLQ(exectest.EventID(0), exectest.Order(0)) // dead-lettered twice
	m := e.Plan("job-drain")
	e.Shadow(m)
	e.RunConsumer(e.NewConsumer(nil, nil))

	if _, err := executor.Drain(e.Ctx, e.NATS.JS, e.Store, executor.DrainOptions{JobID: m.ID, Actor: "dora"}); !errors.Is(err, executor.ErrNotDrainable) {
		t.Fatalf("drain of a shadowed job: %v, want ErrNotDrainable (execute still reads its messages)", err)
	}
	if r := mustExecute(t, e, options(m, nil)); r.JobStatus != "completed" {
		t.Fatalf("execute: %+v", r.Final)
	}
	e.PublishDLQ(exectest.EventID(10), exectest.Order(10)) // a new failure, after the plan

	res, err := executor.Drain(e.Ctx, e.NATS.JS, e.Store, executor.DrainOptions{JobID: m.ID, Actor: "dora"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 11 || res.AlreadyGone != 0 || dlqMessages(t, e) != 1 {
		t.Fatalf("drain %+v, %d messages left; want 11 deleted (10 targets, one twice) and the new one left", res, dlqMessages(t, e))
	}
	again, err := executor.Drain(e.Ctx, e.NATS.JS, e.Store, executor.DrainOptions{JobID: m.ID, Actor: "dora"})
	if err != nil || again.Deleted != 0 || again.AlreadyGone != 11 {
		t.Fatalf("second drain %+v, %v; want nothing deleted, 11 already gone", again, err)
	}
	if actions := auditActions(t, e, m.ID); !slices.Contains(actions, "drain") {
		t.Errorf("audit %v has no drain", actions)
	}
	next := e.PlanWith("job-after-drain", nil)
	if !slices.Equal(next.EventIDs, []string{exectest.EventID(10)}) || next.Stats.AlreadyCompleted != 0 || next.Stats.Scanned != 1 {
		t.Fatalf("plan after the drain: targets %v, scanned %d, already completed %d; want only the new event", next.EventIDs,
			next.Stats.Scanned, next.Stats.AlreadyCompleted)
	}
}

func TestDrainNeverTouchesABackfillSource(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	e.RunConsumer(e.NewConsumer(nil, nil))
	processedLive(t, e, 5)
	m := planBackfill(e, "job-backfill-drain", true)
	e.Shadow(m)
	mustExecute(t, e, options(m, nil))
	before := e.StreamMessages()
	if _, err := executor.Drain(e.Ctx, e.NATS.JS, e.Store, executor.DrainOptions{JobID: m.ID, Actor: "dora"}); !errors.Is(err, executor.ErrNotDrainable) {
		t.Fatalf("drain of a backfill: %v, want ErrNotDrainable", err)
	}
	if after := e.StreamMessages(); after != before {
		t.Fatalf("a refused drain changed the source stream: %d -> %d messages", before, after)
	}
}
