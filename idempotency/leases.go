package idempotency

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/internal/every"
)

// leases renews the leases of the requests running now, all from one goroutine: a request that
// outlives a Heartbeat interval gets its lease renewed, and a request that does not (nearly all)
// costs a map entry rather than a goroutine and a timer of its own.
type leases struct {
	store     Store
	lease     time.Duration
	heartbeat time.Duration
	log       *slog.Logger

	mu      sync.Mutex
	running map[*calls]time.Time
}

// hold registers c's lease until the returned func is called.
func (l *leases) hold(c *calls) (release func()) {
	l.mu.Lock()
	l.running[c] = time.Now()
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		delete(l.running, c)
		l.mu.Unlock()
	}
}

// start renews, every heartbeat, the leases held for at least a heartbeat; stop ends it.
func (l *leases) start() (stop func()) {
	l.running = map[*calls]time.Time{}
	return every.Interval(context.Background(), l.heartbeat, func() bool {
		l.renew()
		return true
	})
}

func (l *leases) renew() {
	l.mu.Lock()
	due := make([]*calls, 0, len(l.running))
	for c, since := range l.running {
		if time.Since(since) >= l.heartbeat {
			due = append(due, c)
		}
	}
	l.mu.Unlock()
	for _, c := range due {
		ctx, cancel := context.WithTimeout(context.Background(), l.heartbeat)
		ok, err := l.store.APIKeysHeartbeat(ctx, c.key, c.owner, l.lease)
		cancel()
		if err == nil && !ok {
			l.log.Warn("idempotency: lease lost while the handler ran", "key", apikey.ShortHash(c.key.KeyHash))
		}
	}
}
