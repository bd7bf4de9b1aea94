package idempotency

import (
	"context"
	"sync"
	"time"

	"github.com/replayctl/replayctl/apikey"
)

// dailyCounts gathers the figures `replayctl keys stats` judges, per route, client and day, in
// memory, and adds them to the ledger every FlushEvery and when the middleware closes: one
// statement for all of them, not a write per request.
type dailyCounts struct {
	mu     sync.Mutex
	counts map[dailyKey]*apikey.DailyCount
}

type dailyKey struct {
	route, client string
	day           time.Time
}

type countKind int

const (
	countRequest countKind = iota
	countReplay
	countInProgress
	countMismatch
	countUncertain
)

func (d *dailyCounts) add(route, client string, at time.Time, kind countKind) {
	at = at.UTC()
	day := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.entry(route, client, day)
	switch kind {
	case countRequest:
		c.Requests++
	case countReplay:
		c.Replays++
	case countInProgress:
		c.InProgress++
	case countMismatch:
		c.Mismatches++
	case countUncertain:
		c.Uncertain++
	}
}

// entry returns the counts of route, client and day, created at zero; d.mu is held.
func (d *dailyCounts) entry(route, client string, day time.Time) *apikey.DailyCount {
	if d.counts == nil {
		d.counts = map[dailyKey]*apikey.DailyCount{}
	}
	k := dailyKey{route, client, day}
	c := d.counts[k]
	if c == nil {
		c = &apikey.DailyCount{Route: route, ClientHash: client, Day: day}
		d.counts[k] = c
	}
	return c
}

// take empties the counts and returns them.
func (d *dailyCounts) take() []apikey.DailyCount {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]apikey.DailyCount, 0, len(d.counts))
	for _, c := range d.counts {
		out = append(out, *c)
	}
	d.counts = nil
	return out
}

// putBack returns counts a failed flush could not add, so the next flush sends them.
func (d *dailyCounts) putBack(counts []apikey.DailyCount) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range counts {
		cur := d.entry(c.Route, c.ClientHash, c.Day)
		cur.Requests += c.Requests
		cur.Replays += c.Replays
		cur.InProgress += c.InProgress
		cur.Mismatches += c.Mismatches
		cur.Uncertain += c.Uncertain
	}
}

func (d *dailyCounts) flush(ctx context.Context, store Store) error {
	counts := d.take()
	if err := store.APIKeyDailyAdd(ctx, counts); err != nil {
		d.putBack(counts)
		return err
	}
	return nil
}
