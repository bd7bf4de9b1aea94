package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/protocol"
)

// consumerSweep measures the billing consumer alone, once per handler count: cfg.events live
// orders (two external calls each) are put on the live stream before it starts, and the rate is
// from its start to the last outcome in the ledger. It answers "do more handlers ever make it
// slower?" and, beside raw async publish in the same run, how far the consumer is from the
// publisher it waits on, without plan, shadow or execute sharing the machine with it.
func (b *bench) consumerSweep(ctx context.Context, handlers []int) error {
	p, err := rawPublish(ctx, b.nc, b.cfg.events)
	if err != nil {
		return err
	}
	b.res.add("rawPublish", p)
	for _, h := range handlers {
		if err := recreateStream(ctx, b.js, liveStream, liveSubjects); err != nil {
			return err
		}
		prefix := fmt.Sprintf("sweep-%d-", h)
		if _, err := asyncPublishTo(ctx, b.nc, func(publish func(*nats.Msg) error) (int64, error) {
			for i := range b.cfg.events {
				m := nats.NewMsg("billing.charge.requested")
				m.Data = benchPayload(i)
				m.Header.Set(protocol.HeaderEventID, prefix+strconv.Itoa(i))
				if err := publish(m); err != nil {
					return 0, err
				}
			}
			return int64(b.cfg.events), nil
		}); err != nil {
			return fmt.Errorf("consumer sweep: seed %d live orders: %w", b.cfg.events, err)
		}
		step := fmt.Sprintf("consumer-sweep-%d", h)
		start := time.Now()
		live, err := b.startConsumer(ctx, step, "-handlers", strconv.Itoa(h))
		if err != nil {
			return err
		}
		done, err := b.waitCompleted(ctx, live, prefix, int64(b.cfg.events))
		took := time.Since(start)
		m, stopErr := live.stop()
		if err != nil {
			return fmt.Errorf("consumer sweep, %d handlers (see %s): %w", h, b.logPath(step), err)
		}
		if stopErr != nil {
			return stopErr
		}
		ph := timedPhase(fmt.Sprintf("billing consumer alone, %d handlers (start to every outcome)", h), done, took)
		ph.MaxRSSMiB, ph.CPUSeconds, ph.Note = m.maxRSSMiB, m.cpuSeconds, batchingNote(b.logPath(step))
		key := "sweep" + strconv.Itoa(h)
		b.res.add(key, ph)
		b.res.compare(fmt.Sprintf("consumer alone, %d handlers, vs raw async publish", h), key, "rawPublish", 0.05)
	}
	return nil
}

// waitCompleted polls the ledger until n events named with prefix completed, or the consumer
// exits, or nothing completed for a minute.
func (b *bench) waitCompleted(ctx context.Context, p *process, prefix string, n int64) (int64, error) {
	var done, last int64
	lastChange := time.Now()
	for {
		if err := b.db.QueryRow(ctx, `select count(*) from effects where consumer = $1 and event_id like $2 and state = 'completed'`,
			consumerName, prefix+"%").Scan(&done); err != nil {
			return done, err
		}
		if done >= n {
			return done, nil
		}
		if done != last {
			last, lastChange = done, time.Now()
		}
		switch {
		case p.exited():
			return done, fmt.Errorf("the billing consumer exited with %d of %d outcomes", done, n)
		case time.Since(lastChange) > time.Minute:
			return done, fmt.Errorf("no outcome for a minute, %d of %d", done, n)
		}
		select {
		case <-ctx.Done():
			return done, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// batchingNote is the consumer's own account of its batching, from the line it logs at stop.
func batchingNote(logPath string) string {
	out, err := os.ReadFile(logPath)
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if _, rest, ok := strings.Cut(line, "the ledger's writes went out as "); ok {
			return "ledger writes: " + rest
		}
	}
	return ""
}

// parseHandlers reads -consumer-sweep's comma-separated handler counts.
func parseHandlers(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		h, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || h < 1 {
			return nil, fmt.Errorf("-consumer-sweep %q: %q is not a handler count; give positive numbers separated by commas, e.g. 16,64,256", s, f)
		}
		out = append(out, h)
	}
	return out, nil
}
