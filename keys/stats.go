package keys

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/health"
)

// RouteStats are one route's figures over the window, each against its threshold.
type RouteStats struct {
	Route      string  `json:"route"`
	Requests   int64   `json:"requests"`
	Replays    int64   `json:"replays"`
	ReplayRate float64 `json:"replayRate"`
	InProgress int64   `json:"inProgress"`
	Mismatches int64   `json:"mismatches"`
	// UncertainInWindow counts records that became uncertain in the window; Uncertain and
	// LapsedLeases are the records awaiting a decision now.
	UncertainInWindow int64 `json:"uncertainInWindow"`
	Records           int64 `json:"records"`
	// RecordsEstimated says Records is PostgreSQL's estimate, not a count (a large ledger: a count
	// would read every record).
	RecordsEstimated bool  `json:"recordsEstimated"`
	Uncertain        int64 `json:"uncertain"`
	LapsedLeases     int64 `json:"lapsedLeases"`
	// OldestUncertainAgeSeconds is how long the oldest uncertain record has waited; 0 with none.
	OldestUncertainAgeSeconds int64 `json:"oldestUncertainAgeSeconds"`
}

// ClientDay is one client's payload mismatches on one route and day, at or over the threshold.
type ClientDay struct {
	Route      string    `json:"route"`
	ClientHash string    `json:"clientHash"`
	Day        time.Time `json:"day"`
	Mismatches int64     `json:"mismatches"`
}

// StatsReport is `replayctl keys stats`.
type StatsReport struct {
	Since  time.Time    `json:"since"`
	Routes []RouteStats `json:"routes"`
	// MismatchingClients are the (route, client, day) at or over health.MaxMismatchesPerDay.
	MismatchingClients []ClientDay       `json:"mismatchingClients"`
	Warnings           []health.Warning  `json:"warnings"`
	Thresholds         map[string]string `json:"thresholds"`
}

// Stats reads the daily counts since (whole UTC days) and the records awaiting a decision, of
// route (empty: every route), and judges them with the consumer side's thresholds
// (package health): replay rate above 0.5 %, ten mismatches a day from one client, an
// uncertain record older than 15 minutes, any lapsed lease after a call started.
func Stats(ctx context.Context, store Store, since, now time.Time, route string) (*StatsReport, error) {
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	if err := checkRoute(ctx, store, route); err != nil {
		return nil, err
	}
	since = since.UTC().Truncate(24 * time.Hour)
	counts, err := store.APIKeyDailySince(ctx, since, route)
	if err != nil {
		return nil, err
	}
	attention, err := store.APIKeysAttention(ctx, route)
	if err != nil {
		return nil, err
	}
	byRoute := map[string]*RouteStats{}
	get := func(name string) *RouteStats {
		if byRoute[name] == nil {
			byRoute[name] = &RouteStats{Route: name}
		}
		return byRoute[name]
	}
	r := &StatsReport{Since: since, Routes: []RouteStats{}, MismatchingClients: []ClientDay{}, Warnings: []health.Warning{}, Thresholds: map[string]string{
		"replayRate": fmt.Sprintf("> %.1f%%", 100*health.MaxReplayRate), "mismatchesPerClientDay": fmt.Sprintf(">= %g", health.MaxMismatchesPerDay),
		"oldestUncertain": "> " + health.MaxUncertainAge.String(), "lapsedLeases": "> 0"}}
	for _, c := range counts {
		s := get(c.Route)
		s.Requests += c.Requests
		s.Replays += c.Replays
		s.InProgress += c.InProgress
		s.Mismatches += c.Mismatches
		s.UncertainInWindow += c.Uncertain
		if float64(c.Mismatches) >= health.MaxMismatchesPerDay {
			r.MismatchingClients = append(r.MismatchingClients, ClientDay{Route: c.Route, ClientHash: c.ClientHash, Day: c.Day.UTC(), Mismatches: c.Mismatches})
		}
	}
	for _, a := range attention {
		s := get(a.Route)
		s.Records, s.RecordsEstimated, s.Uncertain, s.LapsedLeases = a.Records, a.RecordsEstimated, a.Uncertain, a.LapsedLeases
		if a.OldestUncertain != nil {
			s.OldestUncertainAgeSeconds = max(0, int64(now.Sub(*a.OldestUncertain)/time.Second))
		}
	}
	for _, s := range byRoute {
		if s.Requests > 0 {
			s.ReplayRate = float64(s.Replays) / float64(s.Requests)
		}
		r.Routes = append(r.Routes, *s)
	}
	sort.Slice(r.Routes, func(i, j int) bool { return r.Routes[i].Route < r.Routes[j].Route })
	r.Warnings = warnings(r)
	return r, nil
}

func warnings(r *StatsReport) []health.Warning {
	w := []health.Warning{}
	for _, s := range r.Routes {
		if s.ReplayRate > health.MaxReplayRate {
			w = append(w, health.Warning{Metric: "replayRate",
				Summary: fmt.Sprintf("%s: %.2f%% of the keyed requests since %s were replays (%d of %d), above %.1f%%",
					s.Route, 100*s.ReplayRate, r.Since.Format(time.DateOnly), s.Replays, s.Requests, 100*health.MaxReplayRate),
				Action: "clients retry too much: check their timeouts against the route's latency and their backoff; nothing ran twice"})
		}
		if s.OldestUncertainAgeSeconds > int64(health.MaxUncertainAge/time.Second) {
			w = append(w, health.Warning{Metric: "uncertain",
				Summary: fmt.Sprintf("%s: %d uncertain records, the oldest waiting %s", s.Route, s.Uncertain, time.Duration(s.OldestUncertainAgeSeconds)*time.Second),
				Action:  "the service's reconcile worker could not settle them: check the provider, then `replayctl keys uncertain --route R` and `replayctl keys resolve`"})
		}
		if s.LapsedLeases > 0 {
			w = append(w, health.Warning{Metric: "lapsedLeases",
				Summary: fmt.Sprintf("%s: %d records are processing under a lapsed lease after an external call started", s.Route, s.LapsedLeases),
				Action:  "an API instance died or stalled mid-request: they become uncertain at the next retry or reconcile pass; check the instances' restarts"})
		}
	}
	for _, c := range r.MismatchingClients {
		w = append(w, health.Warning{Metric: "mismatches",
			Summary: fmt.Sprintf("%s: client %s reused keys with a different request %d times on %s", c.Route, apikey.ShortHash(c.ClientHash), c.Mismatches, c.Day.Format(time.DateOnly)),
			Action:  "check that client's key generation: a key must be new per intent and the same on every retry of it"})
	}
	return w
}
