package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/internal/suggest"
)

// ErrUnknownConsumer means the ledger holds nothing for the consumer named: no effects row, no
// registered version, no job. It is nearly always a typo, and a report of zeros (or a prune that
// prunes nothing, every night) would hide it.
var ErrUnknownConsumer = errors.New("unknown consumer")

// Incident kinds, as effect_incidents.kind stores them.
const (
	// IncidentPayloadConflict is a message refused because its payload fingerprint differs from
	// the one stored for its event ID.
	IncidentPayloadConflict = "payload_conflict"
	// IncidentLeaseLapsed is a processing row found with its lease expired: the handler crashed,
	// stalled or outlived its lease.
	IncidentLeaseLapsed = "lease_lapsed"
)

// EffectIncident is one row of effect_incidents.
type EffectIncident struct {
	Consumer      string
	EventID       string
	EffectVersion int
	Kind          string
	// DedupKey names the incident itself, so the same one seen twice is recorded once.
	DedupKey     string
	StoredHash   string
	IncomingHash string
	LeaseOwner   string
}

// LeaseLapsedIncident describes the lapse of r's lease, keyed by its owner and expiry: a lease
// revived by a late heartbeat and lapsing again is a second incident, the same lapse seen by two
// instances is one.
func LeaseLapsedIncident(r EffectRow) EffectIncident {
	expiry := "none"
	if r.LeaseExpiresAt != nil {
		expiry = r.LeaseExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	return EffectIncident{Consumer: r.Consumer, EventID: r.EventID, EffectVersion: r.EffectVersion,
		Kind: IncidentLeaseLapsed, DedupKey: r.LeaseOwner + "@" + expiry, LeaseOwner: r.LeaseOwner}
}

const effectIncidentsInsert = `
insert into effect_incidents (consumer, event_id, effect_version, kind, dedup_key, stored_hash, incoming_hash, lease_owner)
values ($1, $2, $3, $4, $5, $6, $7, $8)
on conflict (consumer, kind, event_id, effect_version, dedup_key) do nothing`

// EffectIncidentsInsert records inc through q, once: an incident already recorded under the same
// key is not counted again.
func EffectIncidentsInsert(ctx context.Context, q Querier, inc EffectIncident) error {
	_, err := q.Exec(ctx, effectIncidentsInsert, inc.Consumer, inc.EventID, inc.EffectVersion, inc.Kind, inc.DedupKey,
		nullable(inc.StoredHash), nullable(inc.IncomingHash), nullable(inc.LeaseOwner))
	if err != nil {
		return fmt.Errorf("record a %s incident of consumer %s event %q version %d: %w",
			inc.Kind, inc.Consumer, inc.EventID, inc.EffectVersion, err)
	}
	return nil
}

// Warning thresholds of ledger stats (docs/ledger.md, "Lifecycle").
const (
	// StatsMaxReplayRate: more deliveries answered from the ledger (duplicates) than this fraction
	// of all deliveries warns.
	StatsMaxReplayRate = 0.005
	// StatsMaxMismatchesPerDay: this many payload conflicts a day, or more, warns.
	StatsMaxMismatchesPerDay = 10.0
	// StatsMaxLeaseExpiriesPerDay: this many lapsed leases a day, or more, warns.
	StatsMaxLeaseExpiriesPerDay = 10.0
	// StatsMaxUncertainAge: any uncertain row older than this warns.
	StatsMaxUncertainAge = 15 * time.Minute
)

// StatsOptions selects what Stats reports on.
type StatsOptions struct {
	Consumer string
	// Window is how far back from the database's now() the rates look.
	Window time.Duration
}

// Stats is the health of one consumer's ledger over a window.
type Stats struct {
	Consumer string `json:"consumer"`
	// Window is StatsOptions.Window as Go writes a duration ("24h0m0s"); WindowSeconds the same.
	Window        string    `json:"window"`
	WindowSeconds float64   `json:"windowSeconds"`
	Since         time.Time `json:"since"`
	Until         time.Time `json:"until"`

	Replay        ReplayStat    `json:"replay"`
	Mismatches    RateStat      `json:"payloadMismatches"`
	LeaseExpiries RateStat      `json:"leaseExpiries"`
	Uncertain     UncertainStat `json:"uncertain"`
	StuckLeases   StuckStat     `json:"stuckLeases"`
	// Warnings lists the metrics over their threshold, each with what to do; empty when none is.
	Warnings []StatsWarning `json:"warnings"`
}

// ReplayStat is the idempotency replay rate: the deliveries the SDK answered from the ledger
// without running the handler (duplicates) over all the deliveries it handled, from the daily
// counts the SDK flushes (delivery_counts). The counts are per UTC day, so the window is
// widened to whole days: Since is the start of the first day counted.
type ReplayStat struct {
	Since      time.Time `json:"since"`
	Deliveries int64     `json:"deliveries"`
	Duplicates int64     `json:"duplicates"`
	Rate       float64   `json:"rate"`
	// MaxRate is the threshold: Warn is Rate > MaxRate.
	MaxRate float64 `json:"maxRate"`
	Warn    bool    `json:"warn"`
}

// RateStat counts incidents in the window and scales them to a day.
type RateStat struct {
	Count  int64   `json:"count"`
	PerDay float64 `json:"perDay"`
	// MaxPerDay is the threshold: Warn is PerDay >= MaxPerDay.
	MaxPerDay float64 `json:"maxPerDay"`
	Warn      bool    `json:"warn"`
}

// UncertainStat is every uncertain row of the consumer now, whatever the window: each is an
// external write nobody has reviewed yet.
type UncertainStat struct {
	Count         int64   `json:"count"`
	P95AgeSeconds float64 `json:"p95AgeSeconds"`
	MaxAgeSeconds float64 `json:"maxAgeSeconds"`
	// MaxAgeThresholdSeconds is the threshold: Warn is MaxAgeSeconds > it.
	MaxAgeThresholdSeconds float64 `json:"maxAgeThresholdSeconds"`
	Warn                   bool    `json:"warn"`
}

// StuckStat counts processing rows whose lease lapsed more than StuckLeaseAfter ago and that
// nobody took over: a message that is never delivered again (removed from the stream, or termed by
// an older SDK) leaves such a row, which no SDK looks at again. Those with a call started may have
// made their external write; they are uncertain in all but name.
type StuckStat struct {
	Count        int64 `json:"count"`
	CallsStarted int64 `json:"callsStarted"`
	// OldestLapsedSeconds is how long ago the oldest of them lapsed.
	OldestLapsedSeconds float64 `json:"oldestLapsedSeconds"`
	// Warn is Count > 0.
	Warn bool `json:"warn"`
}

// StatsWarning is one metric over its threshold, said for an operator.
type StatsWarning struct {
	// Metric is the JSON name of the metric: replay, payloadMismatches, leaseExpiries, uncertain,
	// stuckLeases.
	Metric string `json:"metric"`
	// Summary says what was found; Action what to do next.
	Summary string `json:"summary"`
	Action  string `json:"action"`
}

// One statement, one snapshot. The delivery counts read the consumer's days the window touches
// (delivery_counts' primary key); the uncertain ages come through effects_attention_idx; the
// incident counts through effect_incidents_consumer_kind_at_idx.
const ledgerStats = `
with w as (select now() as until, now() - $2::bigint * interval '1 millisecond' as since)
select w.since, w.until, (date_trunc('day', w.since at time zone 'utc') at time zone 'utc'), dc.deliveries, dc.duplicates,
       (select count(*) from effect_incidents i
         where i.consumer = $1 and i.kind = 'payload_conflict' and i.at >= w.since and i.at <= w.until),
       (select count(*) from effect_incidents i
         where i.consumer = $1 and i.kind = 'lease_lapsed' and i.at >= w.since and i.at <= w.until),
       u.n, coalesce(u.p95, 0), coalesce(u.oldest, 0), sl.n, sl.called, coalesce(sl.oldest, 0)
  from w,
       lateral (select coalesce(sum(d.deliveries), 0)::bigint as deliveries,
                       coalesce(sum(d.duplicate_deliveries), 0)::bigint as duplicates
                  from delivery_counts d
                 where d.consumer = $1 and d.day >= (w.since at time zone 'utc')::date) dc,
       lateral (select count(*) as n,
                       percentile_cont(0.95) within group (order by extract(epoch from w.until - e.updated_at)) as p95,
                       max(extract(epoch from w.until - e.updated_at))::float8 as oldest
                  from effects e where e.consumer = $1 and e.state = 'uncertain') u,
       lateral (select count(*) as n, count(*) filter (where e.calls_started > 0) as called,
                       max(extract(epoch from w.until - e.lease_expires_at))::float8 as oldest
                  from effects e where e.consumer = $1 and e.state = 'processing'
                   and e.lease_expires_at < w.until - $3::bigint * interval '1 millisecond') sl`

// LedgerStats reports opts.Consumer's replay rate (duplicate deliveries over deliveries), payload
// conflicts and lease expiries over
// opts.Window, and its uncertain rows now, each against its threshold. An unknown consumer
// matches ErrUnknownConsumer.
func (s *Store) LedgerStats(ctx context.Context, opts StatsOptions) (*Stats, error) {
	if err := s.CheckSchema(ctx); err != nil {
		return nil, err
	}
	if err := s.CheckConsumer(ctx, opts.Consumer); err != nil {
		return nil, err
	}
	st := &Stats{Consumer: opts.Consumer, Window: opts.Window.String(), WindowSeconds: opts.Window.Seconds()}
	var mismatches, lapses int64
	u, sl := &st.Uncertain, &st.StuckLeases
	err := s.pool.QueryRow(ctx, ledgerStats, opts.Consumer, opts.Window.Milliseconds(), StuckLeaseAfter.Milliseconds()).Scan(
		&st.Since, &st.Until, &st.Replay.Since, &st.Replay.Deliveries, &st.Replay.Duplicates, &mismatches, &lapses, &u.Count, &u.P95AgeSeconds,
		&u.MaxAgeSeconds, &sl.Count, &sl.CallsStarted, &sl.OldestLapsedSeconds)
	if err != nil {
		return nil, fmt.Errorf("read the ledger stats of consumer %s: %w", opts.Consumer, err)
	}
	days := opts.Window.Hours() / 24
	st.Replay.MaxRate = StatsMaxReplayRate
	if st.Replay.Deliveries > 0 {
		st.Replay.Rate = float64(st.Replay.Duplicates) / float64(st.Replay.Deliveries)
	}
	st.Replay.Warn = st.Replay.Rate > StatsMaxReplayRate
	st.Mismatches = rateStat(mismatches, days, StatsMaxMismatchesPerDay)
	st.LeaseExpiries = rateStat(lapses, days, StatsMaxLeaseExpiriesPerDay)
	u.MaxAgeThresholdSeconds = StatsMaxUncertainAge.Seconds()
	u.Warn = u.Count > 0 && u.MaxAgeSeconds > u.MaxAgeThresholdSeconds
	sl.Warn = sl.Count > 0
	st.Warnings = st.warnings()
	return st, nil
}

func rateStat(n int64, days, maxPerDay float64) RateStat {
	r := RateStat{Count: n, MaxPerDay: maxPerDay}
	if days > 0 {
		r.PerDay = float64(n) / days
	}
	r.Warn = r.PerDay >= maxPerDay
	return r
}

func (st *Stats) warnings() []StatsWarning {
	w := []StatsWarning{}
	if st.Replay.Warn {
		w = append(w, StatsWarning{Metric: "replay",
			Summary: fmt.Sprintf("%.2f%% of the deliveries since %s were answered from the ledger as duplicates (%d of %d), above %.1f%%",
				100*st.Replay.Rate, st.Replay.Since.UTC().Format(time.DateOnly), st.Replay.Duplicates, st.Replay.Deliveries, 100*StatsMaxReplayRate),
			Action: "the ledger is absorbing repeated deliveries: check for lost or late acks (handlers slower than the durable's AckWait, consumer restarts), " +
				"producers retrying with the same Event-Id, and replays of events that were already done; nothing was charged twice, but the cause is upstream"})
	}
	if st.Mismatches.Warn {
		w = append(w, StatsWarning{Metric: "payloadMismatches",
			Summary: fmt.Sprintf("%d messages in the window reused an event ID with a different payload (%.1f a day, threshold %g)",
				st.Mismatches.Count, st.Mismatches.PerDay, StatsMaxMismatchesPerDay),
			Action: "a producer reuses Event-Ids for different requests: find it from the refused messages' event IDs in effect_incidents and fix its ID scheme; refused messages were not processed"})
	}
	if st.LeaseExpiries.Warn {
		w = append(w, StatsWarning{Metric: "leaseExpiries",
			Summary: fmt.Sprintf("%d leases lapsed in the window (%.1f a day, threshold %g)",
				st.LeaseExpiries.Count, st.LeaseExpiries.PerDay, StatsMaxLeaseExpiriesPerDay),
			Action: "handlers crash or outlive their lease: check the consumer's restarts and handler latency, and raise its Lease if calls are slow; lapses after a call started end uncertain"})
	}
	if st.Uncertain.Warn {
		w = append(w, StatsWarning{Metric: "uncertain",
			Summary: fmt.Sprintf("%d uncertain rows, the oldest uncertain for %s (p95 %s), over %s",
				st.Uncertain.Count, seconds(st.Uncertain.MaxAgeSeconds), seconds(st.Uncertain.P95AgeSeconds), StatsMaxUncertainAge),
			Action: "an external write may or may not have happened for each: check the provider and reconcile them by hand; they are never retried or replayed automatically"})
	}
	if st.StuckLeases.Warn {
		w = append(w, StatsWarning{Metric: "stuckLeases",
			Summary: fmt.Sprintf("%d rows are processing under a lease that lapsed over %s ago and nobody took over (%d with an external call started; the oldest lapsed %s ago)",
				st.StuckLeases.Count, StuckLeaseAfter, st.StuckLeases.CallsStarted, seconds(st.StuckLeases.OldestLapsedSeconds)),
			Action: "if the consumer has been running meanwhile, their messages are not being delivered again; those with a call started may have made their external write: " +
				"`replayctl reconcile --consumer " + st.Consumer + "` asks the consumer's look-up about them and settles them as uncertain rows; " +
				"find the others with `select event_id, effect_version from effects where state = 'processing' and calls_started = 0 and lease_expires_at < now()`"})
	}
	return w
}

// seconds renders an age in whole seconds, the precision an operator reads.
func seconds(s float64) time.Duration { return time.Duration(s) * time.Second }

const consumerKnown = `
select exists (select 1 from effects where consumer = $1)
    or exists (select 1 from effect_versions where consumer = $1)
    or exists (select 1 from jobs where consumer = $1)`

// effectsConsumers lists the consumers with effects rows by walking the primary key's first
// column from one value to the next (a loose index scan), not by reading every row.
const effectsConsumers = `
with recursive c as (
    select min(consumer) as consumer from effects
    union all
    select (select min(consumer) from effects where consumer > c.consumer) from c where c.consumer is not null)
select consumer from c where consumer is not null`

// knownConsumers adds the consumers known only by a registered version or a job (small tables)
// to effectsConsumers: every name CheckConsumer accepts.
const knownConsumers = `
with recursive c as (
    select min(consumer) as consumer from effects
    union all
    select (select min(consumer) from effects where consumer > c.consumer) from c where c.consumer is not null)
select consumer from c where consumer is not null
union select consumer from effect_versions
union select consumer from jobs
order by 1`

// EffectsConsumers returns the consumers that have effects rows, sorted.
func (s *Store) EffectsConsumers(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, effectsConsumers)
	if err != nil {
		return nil, fmt.Errorf("list the consumers in the ledger: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list the consumers in the ledger: %w", err)
	}
	return names, nil
}

// CheckConsumer returns an error matching ErrUnknownConsumer when the ledger holds nothing for
// consumer (no effects row, effect version or job): it names the consumers the ledger does know
// and the nearest of them, for a misspelt --consumer.
func (s *Store) CheckConsumer(ctx context.Context, consumer string) error {
	var known bool
	if err := s.pool.QueryRow(ctx, consumerKnown, consumer).Scan(&known); err != nil {
		return fmt.Errorf("look up consumer %s in the ledger: %w", consumer, err)
	}
	if known {
		return nil
	}
	names, err := s.KnownConsumers(ctx)
	if err != nil {
		return err
	}
	hint := "the ledger knows no consumer at all"
	if len(names) > 0 {
		const most = 20
		hint = "known consumers: " + strings.Join(names[:min(most, len(names))], ", ")
		if len(names) > most {
			hint += fmt.Sprintf(" and %d more", len(names)-most)
		}
	}
	guess := ""
	if g := suggest.Phrase(suggest.Closest(consumer, names)); g != "" {
		guess = g + " "
	}
	return fmt.Errorf("%w: the ledger holds no effects, versions or jobs for consumer %q; %scheck --consumer (%s)",
		ErrUnknownConsumer, consumer, guess, hint)
}
