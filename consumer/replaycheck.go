package consumer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/replayctl/replayctl/ledger"
)

// executingTTL is how long a positive registry answer is trusted: a replay publishes thousands of
// messages for one (job, version), and a job cancelled meanwhile is honoured within this delay.
// Negative answers are never cached, so a job registered a moment ago is accepted at once.
const executingTTL = 5 * time.Second

type replayKey struct {
	version int
	job     string
}

type executingCache struct {
	mu    sync.Mutex
	until map[replayKey]time.Time
}

func newExecutingCache() executingCache {
	return executingCache{until: map[replayKey]time.Time{}}
}

// replayAllowed reports whether ev's (job, effect version) is registered as executing.
func (c *Consumer) replayAllowed(ctx context.Context, ev Event) (bool, error) {
	key := replayKey{version: ev.EffectVersion, job: ev.JobID}
	c.executing.mu.Lock()
	until, ok := c.executing.until[key]
	c.executing.mu.Unlock()
	if ok && time.Now().Before(until) {
		return true, nil
	}
	executing, err := ledger.EffectVersionsIsExecuting(ctx, c.cfg.Store.Pool, c.cfg.Name, ev.EffectVersion, ev.JobID)
	if err != nil {
		return false, fmt.Errorf("event %q: %w", ev.ID, err)
	}
	c.executing.mu.Lock()
	if executing {
		c.executing.until[key] = time.Now().Add(executingTTL)
	} else {
		delete(c.executing.until, key)
	}
	c.executing.mu.Unlock()
	return executing, nil
}
