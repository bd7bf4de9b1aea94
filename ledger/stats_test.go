package ledger_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/health"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// seedEffects inserts n billing rows named prefix0001... created ago before now(), with job_id
// set when job is not empty.
func seedEffects(t *testing.T, store *ledger.Store, prefix string, n int, ago, job string) {
	t.Helper()
	execSQL(t, store, `
insert into effects (consumer, event_id, effect_version, state, request_hash, job_id, created_at, updated_at)
select 'billing', $1::text || lpad(i::text, 4, '0'), 1, 'completed', 'sha256:' || i, $2, now() - $3::interval, now() - $3::interval
  from generate_series(1, $4::int) i`, prefix, nullIfEmpty(job), ago, n)
}

// seedIncidents records n incidents of kind for billing, ago before now().
func seedIncidents(t *testing.T, store *ledger.Store, kind string, n int, ago string) {
	t.Helper()
	execSQL(t, store, `
insert into effect_incidents (at, consumer, event_id, effect_version, kind, dedup_key)
select now() - $3::interval, 'billing', 'evt-' || i, 1, $1, $2::text || i from generate_series(1, $4::int) i`,
		kind, kind+ago, ago, n)
}

// seedUncertain inserts billing uncertain rows that became uncertain the given (distinct) minutes ago.
func seedUncertain(t *testing.T, store *ledger.Store, minutesAgo ...float64) {
	t.Helper()
	execSQL(t, store, `
insert into effects (consumer, event_id, effect_version, state, request_hash, updated_at)
select 'billing', 'unc-' || m, 1, 'uncertain', 'sha256:u', now() - m * interval '1 minute'
  from unnest($1::float8[]) as u(m)`, minutesAgo)
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// stats are the ledger's figures as `replayctl ledger stats` judges them (package health).
func stats(t *testing.T, store *ledger.Store, window time.Duration) *health.Report {
	t.Helper()
	st, err := health.Read(t.Context(), store, ledger.StatsOptions{Consumer: "billing", Window: window})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func warned(st *health.Report, metric string) bool {
	for _, w := range st.Warnings {
		if w.Metric == metric {
			return w.Summary != "" && w.Action != ""
		}
	}
	return false
}

// seedDeliveries sets billing's delivery counts of the UTC day daysAgo days before today.
func seedDeliveries(t *testing.T, store *ledger.Store, daysAgo, deliveries, duplicates int) {
	t.Helper()
	execSQL(t, store, `
insert into delivery_counts (consumer, day, deliveries, duplicate_deliveries)
values ('billing', (now() at time zone 'utc')::date - $1::int, $2, $3)`, daysAgo, deliveries, duplicates)
}

// The replay rate is duplicate deliveries answered from the ledger over all deliveries, read from
// the SDK's daily counts. (It used to be the share of effects rows written by replay jobs, which
// reported 0 for 20 duplicates of 21 deliveries: issue 15.)
func TestLedgerStatsReplayRateWarnsAboveHalfAPercent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		duplicates int
		rate       float64
		warn       bool
	}{{5, 0.005, false}, {6, 0.006, true}} {
		store := pgtest.Ledger(t)
		seedEffects(t, store, "live-", 10, "1 hour", "")
		// Today and yesterday, which a 24 h window touches: 1000 deliveries.
		if err := store.DeliveryCountsAdd(t.Context(), "billing", ledger.DeliveryCounts{Deliveries: 400, Duplicates: 2}); err != nil {
			t.Fatal(err)
		}
		if err := store.DeliveryCountsAdd(t.Context(), "billing", ledger.DeliveryCounts{Deliveries: 200, Duplicates: 1}); err != nil {
			t.Fatal(err)
		}
		seedDeliveries(t, store, 1, 400, tc.duplicates-3)
		// Three days ago: counted by a week's window only.
		seedDeliveries(t, store, 3, 1000, 900)
		st := stats(t, store, 24*time.Hour)
		r := st.Replay
		if r.Deliveries != 1000 || r.Duplicates != int64(tc.duplicates) || math.Abs(r.Rate-tc.rate) > 1e-12 || r.MaxRate != 0.005 {
			t.Errorf("%d duplicates of 1000 deliveries: %+v, want rate %g", tc.duplicates, r, tc.rate)
		}
		if day := st.Since.UTC().Truncate(24 * time.Hour); !r.Since.Equal(day) {
			t.Errorf("counted since %s, want the start of the window's first UTC day %s", r.Since, day)
		}
		if r.Warn != tc.warn || warned(st, "replay") != tc.warn {
			t.Errorf("rate %g: warn %t, warnings %+v; want warn %t", r.Rate, r.Warn, st.Warnings, tc.warn)
		}
		week := stats(t, store, 7*24*time.Hour).Replay
		if week.Deliveries != 2000 || week.Duplicates != int64(900+tc.duplicates) {
			t.Errorf("a week: %+v, want 2000 deliveries and %d duplicates", week, 900+tc.duplicates)
		}
	}
}

func TestLedgerStatsIncidentsWarnAtTenADay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind, metric string
		pick         func(*health.Report) health.RateStat
	}{
		{ledger.IncidentPayloadConflict, "payloadMismatches", func(s *health.Report) health.RateStat { return s.Mismatches }},
		{ledger.IncidentLeaseLapsed, "leaseExpiries", func(s *health.Report) health.RateStat { return s.LeaseExpiries }},
	} {
		store := pgtest.Ledger(t)
		seedEffects(t, store, "live-", 1, "1 hour", "")
		seedIncidents(t, store, tc.kind, 9, "3 hours")
		seedIncidents(t, store, tc.kind, 7, "30 hours")
		below := tc.pick(stats(t, store, 24*time.Hour))
		if below.Count != 9 || below.PerDay != 9 || below.MaxPerDay != 10 || below.Warn {
			t.Errorf("%s: 9 in 24h: %+v, want 9 a day, no warning", tc.kind, below)
		}

		seedIncidents(t, store, tc.kind, 1, "10 minutes")
		st := stats(t, store, 24*time.Hour)
		if at := tc.pick(st); at.Count != 10 || at.PerDay != 10 || !at.Warn || !warned(st, tc.metric) {
			t.Errorf("%s: 10 in 24h: %+v, warnings %+v; want a warning at 10 a day", tc.kind, at, st.Warnings)
		}
		// 17 over two days is 8.5 a day: below the threshold again.
		if two := tc.pick(stats(t, store, 48*time.Hour)); two.Count != 17 || two.PerDay != 8.5 || two.Warn {
			t.Errorf("%s: 17 in 48h: %+v, want 8.5 a day, no warning", tc.kind, two)
		}
	}
}

func TestLedgerStatsUncertainWarnsWhenAnyIsOlderThanFifteenMinutes(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	// Uncertain for 1 to 14 minutes: every age, the p95 and the oldest, is under the threshold.
	ages := make([]float64, 14)
	for i := range ages {
		ages[i] = float64(i + 1)
	}
	seedUncertain(t, store, ages...)
	st := stats(t, store, 24*time.Hour)
	u := st.Uncertain
	// percentile_cont(0.95) over 14 values is at position 0.95 * 13 = 12.35: 13 + 0.35 minutes.
	if u.Count != 14 || math.Abs(u.P95AgeSeconds-13.35*60) > 2 || math.Abs(u.MaxAgeSeconds-14*60) > 2 || u.Warn || warned(st, "uncertain") {
		t.Errorf("uncertain aged 1..14 minutes: %+v, want 14 rows, p95 801s, max 840s, no warning", u)
	}

	seedUncertain(t, store, 16)
	st = stats(t, store, 24*time.Hour)
	if u := st.Uncertain; u.Count != 15 || !u.Warn || u.P95AgeSeconds > 15*60 || !warned(st, "uncertain") {
		t.Errorf("one uncertain row at 16 minutes: %+v, want a warning although p95 is under 15 minutes", u)
	}
	if !strings.Contains(st.Warnings[0].Action, "reconcile them by hand") {
		t.Errorf("the uncertain warning does not say what to do: %+v", st.Warnings[0])
	}
}

func TestLedgerStatsWarnsOfLeasesLapsedLongAgoThatNobodyTookOver(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	execSQL(t, store, `
insert into effects (consumer, event_id, effect_version, state, request_hash, lease_owner, lease_expires_at, calls_started)
values ('billing', 'live-lease', 1, 'processing', 'sha256:a', 'w1', now() + interval '20 seconds', 1),
       ('billing', 'lapsed-now', 1, 'processing', 'sha256:b', 'w1', now() - interval '5 minutes', 1),
       ('refunds', 'other-consumer', 1, 'processing', 'sha256:c', 'w1', now() - interval '2 hours', 1)`)
	st := stats(t, store, 24*time.Hour)
	if st.StuckLeases.Count != 0 || warned(st, "stuckLeases") {
		t.Errorf("a live lease and one lapsed 5 minutes ago (a redelivery is still due): %+v, want none stuck", st.StuckLeases)
	}

	execSQL(t, store, `
insert into effects (consumer, event_id, effect_version, state, request_hash, lease_owner, lease_expires_at, calls_started)
values ('billing', 'stuck-called', 2, 'processing', 'sha256:d', 'w2', now() - interval '40 minutes', 1),
       ('billing', 'stuck-idle', 2, 'processing', 'sha256:e', 'w2', now() - interval '20 minutes', 0)`)
	st = stats(t, store, 24*time.Hour)
	sl := st.StuckLeases
	if sl.Count != 2 || sl.CallsStarted != 1 || math.Abs(sl.OldestLapsedSeconds-40*60) > 2 || !sl.Warn || !warned(st, "stuckLeases") {
		t.Fatalf("two leases lapsed 20 and 40 minutes ago: %+v, want 2 stuck, 1 with a call started, oldest 2400s, a warning", sl)
	}
	for _, w := range st.Warnings {
		if w.Metric == "stuckLeases" && !strings.Contains(w.Action, "replayctl reconcile --consumer "+st.Consumer) {
			t.Errorf("the warning does not say what to do: %+v", w)
		}
	}
}

func TestLedgerStatsOfAQuietConsumerWarnsOfNothing(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	seedEffects(t, store, "live-", 3, "30 minutes", "")
	st := stats(t, store, time.Hour)
	if st.Replay.Deliveries != 0 || st.Replay.Rate != 0 || st.Uncertain.Count != 0 || len(st.Warnings) != 0 ||
		st.Until.Sub(st.Since) != time.Hour || st.Window != "1h0m0s" {
		t.Errorf("quiet consumer: %+v", st)
	}

	_, err := store.LedgerStats(t.Context(), ledger.StatsOptions{Consumer: "biling", Window: time.Hour})
	if !errors.Is(err, ledger.ErrUnknownConsumer) || !strings.Contains(err.Error(), "known consumers: billing") {
		t.Errorf("stats of a misspelt consumer: %v", err)
	}
}

func TestEffectIncidentsInsertRecordsTheSameIncidentOnce(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	expiry := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	row := ledger.EffectRow{Consumer: "billing", EventID: "evt-1", EffectVersion: 2, LeaseOwner: "billing-7f", LeaseExpiresAt: &expiry}
	for range 2 {
		if err := ledger.EffectIncidentsInsert(t.Context(), store.Pool(), ledger.LeaseLapsedIncident(row)); err != nil {
			t.Fatal(err)
		}
	}
	later := expiry.Add(time.Minute)
	row.LeaseExpiresAt = &later
	if err := ledger.EffectIncidentsInsert(t.Context(), store.Pool(), ledger.LeaseLapsedIncident(row)); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, store, `select count(*) from effect_incidents where kind = 'lease_lapsed' and lease_owner = 'billing-7f'`); n != 2 {
		t.Errorf("%d incidents for one lapse seen twice and a second lapse, want 2", n)
	}
}
