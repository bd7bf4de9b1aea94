package executor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
)

// Watching a job that is not final goes on until ctx ends (Ctrl-C), which is no error. NATS that
// cannot be reached is tried once, not at every report, and every report says the durable's
// counts are left out.
func TestWatchEndsWithItsContextAndDoesNotReconnectEveryReport(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(3, "job-exec-watch")
	ctx, cancel := context.WithCancel(e.Ctx)
	defer cancel()
	var connects, reports int
	err := executor.Watch(ctx, e.Store, executor.WatchOptions{Interval: 20 * time.Millisecond,
		StatusOptions: executor.StatusOptions{JobID: m.ID, JetStream: func(context.Context) (jetstream.JetStream, func(), error) {
			connects++
			return nil, nil, errors.New("dial tcp 127.0.0.1:1: connection refused")
		}},
		Report: func(r *executor.StatusReport) error {
			reports++
			if !strings.Contains(r.DurableNote, "NATS is unreachable") || r.Status != "shadowed" {
				t.Errorf("report %d: status %s, note %q", reports, r.Status, r.DurableNote)
			}
			if reports == 5 {
				cancel()
			}
			return nil
		}})
	if err != nil {
		t.Fatalf("a watch ended by its context returned %v, want nil", err)
	}
	if reports != 5 || connects != 1 {
		t.Fatalf("%d reports and %d connects; want 5 reports and one connect", reports, connects)
	}
}
