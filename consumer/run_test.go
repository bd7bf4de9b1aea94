package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
)

func TestRunProcessesTheStreamUntilCancelled(t *testing.T) {
	e := newEnv(t)
	c := e.newConsumer(func(cfg *consumer.Config) { cfg.Concurrency = 4 })
	const events = 20
	for i := range events {
		e.publish(fmt.Sprintf("e%02d", i), orderJSON(fmt.Sprintf("acct-%d", i), 100+i), nil)
	}
	e.publish("e00", orderJSON("acct-0", 100), nil) // a repeat, answered from the ledger

	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	pgtest.WaitFor(t, 10*time.Second, func() (bool, error) {
		return e.count(`select count(*) from effects where state = 'completed'`) == events, nil
	})
	e.settled(e.durable(c))
	cancelRun(t, cancel, done, 5*time.Second)
	if n := e.p.calls.Load(); n != events {
		t.Fatalf("provider calls %d, want one per event (%d)", n, events)
	}
}

func TestRunNeedsAStreamAndADeadLetterSubject(t *testing.T) {
	e := newEnv(t)
	c := e.newConsumer(func(cfg *consumer.Config) { cfg.Stream, cfg.DLQSubject = "", "" })
	err := c.Run(e.ctx)
	if !errors.Is(err, consumer.ErrBadConfig) || !strings.Contains(err.Error(), "Stream:") || !strings.Contains(err.Error(), "DLQSubject:") {
		t.Fatalf("Run without Stream and DLQSubject: %v", err)
	}
}
