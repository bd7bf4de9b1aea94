package consumer

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// executingTTL is how long a positive registry answer is trusted: a replay publishes thousands of
// messages for one (job, version), and a job cancelled meanwhile is honoured within this delay.
// Negative answers are never cached, so a job registered a moment ago is accepted at once.
const executingTTL = 5 * time.Second

type replayKey struct {
	version int
	job     string
}

type executingEntry struct {
	until      time.Time
	sourceKind string
}

type executingCache struct {
	mu      sync.Mutex
	entries map[replayKey]executingEntry
}

func newExecutingCache() executingCache {
	return executingCache{entries: map[replayKey]executingEntry{}}
}

// replayAllowed reports whether ev's (job, effect version) is registered as executing, and the
// job's source kind (jobtype.SourceDLQ or jobtype.SourceBackfill).
func (c *Consumer) replayAllowed(ctx context.Context, ev Event) (bool, string, error) {
	key := replayKey{version: ev.EffectVersion, job: ev.JobID}
	c.executing.mu.Lock()
	entry, ok := c.executing.entries[key]
	c.executing.mu.Unlock()
	if ok && time.Now().Before(entry.until) {
		return true, entry.sourceKind, nil
	}
	r, err := c.cfg.Store.EffectVersionsIsExecuting(ctx, c.cfg.Name, ev.EffectVersion, ev.JobID)
	if err != nil {
		return false, "", fmt.Errorf("event %q: %w", ev.ID, err)
	}
	c.executing.mu.Lock()
	if r.Executing {
		c.executing.entries[key] = executingEntry{until: time.Now().Add(executingTTL), sourceKind: r.SourceKind}
	} else {
		delete(c.executing.entries, key)
	}
	c.executing.mu.Unlock()
	return r.Executing, r.SourceKind, nil
}
