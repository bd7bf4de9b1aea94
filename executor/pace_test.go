package executor_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
)

// stages records a run's stage lines.
type stages struct {
	mu    sync.Mutex
	lines []string
}

func (s *stages) add(line string) { s.mu.Lock(); s.lines = append(s.lines, line); s.mu.Unlock() }

func (s *stages) has(sub string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

func TestPaceSlowsAndSpeedsARunningExecute(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(100, "job-exec-pace")
	e.RunConsumer(e.NewConsumer(nil, nil))

	var seen stages
	type outcome struct {
		r   *executor.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := execute(e, options(m, func(o *executor.Options) {
			o.Rate, o.Canary, o.Stage = 20, executor.NoCanary, seen.add
		}))
		done <- outcome{r, err}
	}()
	waitFor(t, "the first publishes", func() bool { return e.StreamMessages() >= 5 })

	one := 1.0
	res, err := executor.Pace(e.Ctx, e.Store, executor.PaceRequest{JobID: m.ID, Rate: &one, Actor: "erin", Reason: "provider latency"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.ExecutorAttached || res.Status != "executing" || res.From.Rate == nil || *res.From.Rate != 20 || *res.To.Rate != 1 || *res.To.MaxInFlight != 1000 {
		t.Fatalf("pace: %+v", res)
	}
	waitFor(t, "the run to take the new rate", func() bool { return seen.has("pace changed (replayctl pace): --rate 20/s -> 1/s") })
	before := e.StreamMessages()
	time.Sleep(2 * time.Second)
	// At 20/s two seconds publish 40 targets; at 1/s two or three.
	if n := e.StreamMessages() - before; n > 4 {
		t.Fatalf("%d targets published in 2 s after pace --rate 1", n)
	}

	zero, inFlight := 0.0, 500
	if _, err := executor.Pace(e.Ctx, e.Store, executor.PaceRequest{JobID: m.ID, Rate: &zero, MaxInFlight: &inFlight, Actor: "erin"}); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-done:
		if out.err != nil {
			t.Fatal(out.err)
		}
		if out.r.Final.Completed != 100 || len(e.DuplicateCharges()) != 0 {
			t.Fatalf("after pace --rate 0: %+v, duplicates %v", out.r.Final, e.DuplicateCharges())
		}
	case <-time.After(20 * time.Second):
		// At 1/s the rest would take over a minute.
		t.Fatal("the run did not speed up after pace --rate 0")
	}
	if !seen.has("--rate 1/s -> 0 (no limit), --max-in-flight 1000 -> 500") {
		t.Errorf("no stage line for the second pace: %v", seen.lines)
	}
	job, err := e.Store.JobsGet(e.Ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if p := job.Pace; p.Rate == nil || *p.Rate != 0 || p.MaxInFlight == nil || *p.MaxInFlight != 500 {
		t.Errorf("stored pace %+v, want rate 0 and max in flight 500", p)
	}
	var paces int
	for _, a := range auditActions(t, e, m.ID) {
		if a == "job.pace" {
			paces++
		}
	}
	if paces != 2 {
		t.Errorf("%d job.pace audit entries, want 2", paces)
	}
}
