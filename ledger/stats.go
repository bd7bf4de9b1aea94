package ledger

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/fault"
	"github.com/replayctl/replayctl/internal/suggest"
)

// ErrUnknownConsumer means the ledger holds nothing for the consumer named: no effects row, no
// registered version, no job. It is nearly always a typo, and a report of zeros (or a prune that
// prunes nothing, every night) would hide it.
var ErrUnknownConsumer = fault.New(fault.Invalid, "unknown consumer")

// Incident kinds, as effect_incidents.kind stores them.
const (
	// IncidentPayloadConflict is a message refused because its payload fingerprint differs from
	// the one stored for its event ID.
	IncidentPayloadConflict = "payload_conflict"
	// IncidentLeaseLapsed is a processing row found with its lease expired: the handler crashed,
	// stalled or outlived its lease.
	IncidentLeaseLapsed = "lease_lapsed"
	// IncidentDeadLetterRefused is a dead letter the DLQ stream refused (full, with discard
	// new): the event was neither handled nor dead-lettered, and is redelivered.
	IncidentDeadLetterRefused = "dead_letter_refused"
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

// StatsOptions selects what Stats reports on.
type StatsOptions struct {
	Consumer string
	// Window is how far back from the database's now() the rates look.
	Window time.Duration
}

// Stats are the figures of one consumer's ledger over a window; the health package judges them
// against its thresholds and says what to do.
type Stats struct {
	Consumer string
	// Window is StatsOptions.Window.
	Window        time.Duration
	Since, Until  time.Time
	Replay        ReplayFigures
	Mismatches    RateFigures
	LeaseExpiries RateFigures
	// DeadLettersRefused counts the dead letters the DLQ stream refused in the window.
	DeadLettersRefused RateFigures
	Uncertain          UncertainFigures
	StuckLeases        StuckFigures
}

// ReplayFigures are the idempotency replay rate: the deliveries the SDK answered from the ledger
// without running the handler (duplicates) over all the deliveries it handled, from the daily
// counts the SDK flushes (delivery_counts). The counts are per UTC day, so the window is
// widened to whole days: Since is the start of the first day counted.
type ReplayFigures struct {
	Since      time.Time `json:"since"`
	Deliveries int64     `json:"deliveries"`
	Duplicates int64     `json:"duplicates"`
	Rate       float64   `json:"rate"`
}

// RateFigures count incidents in the window and scale them to a day.
type RateFigures struct {
	Count  int64   `json:"count"`
	PerDay float64 `json:"perDay"`
}

// UncertainFigures are every uncertain row of the consumer now, whatever the window: each is an
// external write nobody has reviewed yet.
type UncertainFigures struct {
	Count         int64   `json:"count"`
	P95AgeSeconds float64 `json:"p95AgeSeconds"`
	MaxAgeSeconds float64 `json:"maxAgeSeconds"`
}

// StuckFigures count processing rows whose lease lapsed more than StuckLeaseAfter ago and that
// nobody took over: a message that is never delivered again (removed from the stream, or termed
// by an older SDK) leaves such a row, which no SDK looks at again. Those with a call started may
// have made their external write; they are uncertain in all but name.
type StuckFigures struct {
	Count        int64 `json:"count"`
	CallsStarted int64 `json:"callsStarted"`
	// OldestLapsedSeconds is how long ago the oldest of them lapsed.
	OldestLapsedSeconds float64 `json:"oldestLapsedSeconds"`
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
       (select count(*) from effect_incidents i
         where i.consumer = $1 and i.kind = 'dead_letter_refused' and i.at >= w.since and i.at <= w.until),
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

// LedgerStats reads opts.Consumer's replay rate (duplicate deliveries over deliveries), payload
// conflicts and lease expiries over opts.Window, and its uncertain and stuck rows now, in one
// snapshot. An unknown consumer matches ErrUnknownConsumer.
func (s *Store) LedgerStats(ctx context.Context, opts StatsOptions) (*Stats, error) {
	if err := s.CheckSchema(ctx); err != nil {
		return nil, err
	}
	if err := s.CheckConsumer(ctx, opts.Consumer); err != nil {
		return nil, err
	}
	st := &Stats{Consumer: opts.Consumer, Window: opts.Window}
	var mismatches, lapses, refused int64
	u, sl := &st.Uncertain, &st.StuckLeases
	err := s.pool.QueryRow(ctx, ledgerStats, opts.Consumer, opts.Window.Milliseconds(), StuckLeaseAfter.Milliseconds()).Scan(
		&st.Since, &st.Until, &st.Replay.Since, &st.Replay.Deliveries, &st.Replay.Duplicates, &mismatches, &lapses, &refused, &u.Count, &u.P95AgeSeconds,
		&u.MaxAgeSeconds, &sl.Count, &sl.CallsStarted, &sl.OldestLapsedSeconds)
	if err != nil {
		return nil, fmt.Errorf("read the ledger stats of consumer %s: %w", opts.Consumer, err)
	}
	days := opts.Window.Hours() / 24
	if st.Replay.Deliveries > 0 {
		st.Replay.Rate = float64(st.Replay.Duplicates) / float64(st.Replay.Deliveries)
	}
	st.Mismatches = rateFigures(mismatches, days)
	st.LeaseExpiries = rateFigures(lapses, days)
	st.DeadLettersRefused = rateFigures(refused, days)
	return st, nil
}

func rateFigures(n int64, days float64) RateFigures {
	r := RateFigures{Count: n}
	if days > 0 {
		r.PerDay = float64(n) / days
	}
	return r
}

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
