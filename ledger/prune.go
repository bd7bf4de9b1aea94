package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/fault"
)

// ErrPruneAsOfFuture means a real prune was asked to judge expiry at a time after the database's
// now(): it would delete evidence before its retention ends. A dry run may look ahead.
var ErrPruneAsOfFuture = fault.New(fault.Invalid, "prune as of a future time")

// DefaultPruneBatchSize is how many rows one prune transaction changes at most.
const DefaultPruneBatchSize = 10_000

// SuggestedCompactAfter is how long after its evidence ended a tombstone should keep its whole
// row (its request hash and external refs, which a look-up about a late copy is given) before
// prune moves it to its compact form, once compaction is turned on (PruneOptions.CompactAfter).
const SuggestedCompactAfter = 7 * 24 * time.Hour

// DefaultTombstoneRetention is how long past its evidence_until an expired tombstone is kept: five
// years, longer than any stream or backup a copy of the event could come back from.
const DefaultTombstoneRetention = 5 * 365 * 24 * time.Hour

// PruneOptions says what to prune. Expiry is judged by comparing the rows' timestamps with AsOf in
// SQL, never by a storage TTL.
type PruneOptions struct {
	// Consumer restricts the prune to one consumer; empty only with AllConsumers.
	Consumer     string
	AllConsumers bool
	// AsOf is the time expiry is judged at; zero means the database's now().
	AsOf time.Time
	// BatchSize caps the rows one transaction changes; 0 means DefaultPruneBatchSize.
	BatchSize int
	// IncidentRetention keeps effect_incidents rows younger than AsOf minus it.
	IncidentRetention time.Duration
	// TombstoneRetention keeps an expired tombstone until its evidence_until is this far behind
	// AsOf, for every consumer; 0 means each consumer's registered retention
	// (consumer.Config.TombstoneRetention), or DefaultTombstoneRetention where it registered none.
	TombstoneRetention time.Duration
	// CompactAfter moves a tombstone whose evidence_until is this far behind AsOf to its compact
	// form (effect_tombstones); 0 compacts nothing. Off unless asked: a consumer SDK older than
	// migration 0035 reads effects only, would not see a compact tombstone, and would take a late
	// copy of its event for a new one. Turn it on once every instance runs an SDK that reads them.
	CompactAfter time.Duration
	// Actor is recorded in the audit entry.
	Actor string
	// Expected is the dry run's total, for Progress; 0 when unknown.
	Expected int64
	// Progress, when set, is called after each committed batch with the changes so far.
	Progress func(done, total int64)
}

// PruneCounts is what a prune removes from one consumer's rows (or from all of them, as a total).
type PruneCounts struct {
	Consumer string `json:"consumer,omitempty"`
	// Tombstoned are rows turned into expired tombstones because evidence_until passed.
	Tombstoned int64 `json:"tombstoned"`
	// Rows are expired tombstones (whole or compact) deleted because evidence_until is more than
	// the tombstone retention behind as-of.
	Rows int64 `json:"rows"`
	// Compacted are tombstones moved from their whole row to their compact form because
	// evidence_until is more than the compaction age behind as-of.
	Compacted int64 `json:"compacted"`
	// Bodies are result bodies dropped because replay_until passed; their rows and result hashes stay.
	Bodies int64 `json:"bodies"`
	// TombstonesBefore is the consumer's tombstone horizon: its tombstones whose evidence_until is
	// before it are deleted. TombstoneRetentionFrom says where the retention came from: option
	// (--tombstone-retention), policy (registered by the consumer's SDK) or default (five years).
	// Both are empty in a report's total.
	TombstonesBefore       time.Time `json:"tombstonesBefore,omitzero"`
	TombstoneRetentionFrom string    `json:"tombstoneRetentionFrom,omitempty"`
}

// PruneReport says what a prune removed, or for a dry run what it would remove.
type PruneReport struct {
	DryRun bool      `json:"dryRun"`
	AsOf   time.Time `json:"asOf"`
	// Consumer is the consumer pruned; empty when AllConsumers.
	Consumer     string `json:"consumer,omitempty"`
	AllConsumers bool   `json:"allConsumers"`
	// Consumers holds the consumers with something to prune, sorted; Total sums them.
	Consumers []PruneCounts `json:"consumers"`
	Total     PruneCounts   `json:"total"`
	// Incidents are effect_incidents rows recorded before IncidentsBefore.
	Incidents       int64     `json:"incidents"`
	IncidentsBefore time.Time `json:"incidentsBefore"`
	// TombstonesBefore is as-of minus the tombstone retention given as an option, or the default
	// one: the horizon of the consumers that registered none (each consumer's own is in Consumers).
	TombstonesBefore time.Time `json:"tombstonesBefore"`
	// CompactBefore is as-of minus CompactAfter: tombstones whose evidence_until is before it are
	// moved to their compact form; absent when compaction is off.
	CompactBefore time.Time `json:"compactBefore,omitzero"`
	BatchSize     int       `json:"batchSize"`
	// Batches counts the transactions a real run committed.
	Batches int `json:"batches"`
	// Interrupted means the run stopped before its end; what it committed stays pruned.
	Interrupted bool `json:"interrupted"`
	// PartitionedBodies are the result bodies in effect_bodies whose week of replay_until is over,
	// every consumer's (a week's partition holds them all): a real run drops those partitions
	// whole (the figure is then PostgreSQL's estimate of what they held).
	PartitionedBodies int64 `json:"partitionedBodies"`
}

// Changes is the number of rows the report deletes or updates.
func (r *PruneReport) Changes() int64 {
	return r.Total.changes() + r.Incidents + r.PartitionedBodies
}

// bodyPartitionsAhead is how far ahead of now every prune makes the weekly partitions of
// effect_bodies, beyond the longest replay window a consumer is expected to register.
const bodyPartitionsAhead = 120 * 24 * time.Hour

// pruneCountPartitionedBodies counts what effect_bodies_drop_before($1) would remove: the rows of
// the weeks that ended by $1, and the default partition's rows before it.
const pruneCountPartitionedBodies = `
select count(*) from effect_bodies
 where replay_until < date_trunc('week', least($1::timestamptz, now()) at time zone 'UTC') at time zone 'UTC'
    or (tableoid = 'effect_bodies_default'::regclass and replay_until < least($1::timestamptz, now()))`

// Shared conditions, over effects aliased e; $1 is the consumer, $2 the horizon (as-of time, or
// for pruneTombstoneOld the tombstone horizon, as-of minus the consumer's tombstone retention). A
// row in processing or uncertain is never pruned: the first is being worked on, the second waits
// for a person. A row of a job that is executing or paused (its own row under the job's version,
// or any row of one of its targets, which execute's drift check reads) is kept until the job
// ends. The active jobs are read once per statement (pruneActive); the two anti-joins then probe
// the job_targets primary key per candidate, or hash the active jobs' targets once, where an OR
// of both made the planner hash every target of every job ever planned.
//
// Each step's condition is written as the predicate of its partial index (migration 0034), so a
// step reads only the rows it can act on, oldest first, up to its horizon: its cost follows the
// rows due, not the ledger (before, every step walked the consumer's primary key).
const (
	pruneActive          = `prune_active as (select id, consumer from jobs where status in ('executing', 'paused') and consumer = $1)`
	pruneStateAllowed    = `e.state not in ('processing', 'uncertain')`
	pruneEvidenceExpired = `e.state in ('received', 'completed', 'reconciled') and e.evidence_until < $2`
	pruneTombstoneOld    = `e.state = 'expired' and e.evidence_until < $2`
	// A row whose evidence expired loses its body as it becomes a tombstone, so the body is not
	// counted twice.
	pruneBodyExpired = `e.result_body is not null and e.replay_until < $2 and ` + pruneStateAllowed + ` and coalesce(e.evidence_until >= $2, true)`
	pruneUnprotected = `not exists (select 1 from prune_active a where a.consumer = e.consumer and a.id = e.job_id)
       and not exists (select 1 from prune_active a join job_targets t on t.job_id = a.id
                        where a.consumer = e.consumer and t.event_id = e.event_id)`
)

const pruneResolveAsOf = `select coalesce($1::timestamptz, now()), now()`

// pruneCountEffects counts consumer $1's rows each step would change: $2 is the as-of time, $3
// the tombstone horizon, $4 the compaction horizon. Each count reads its own index. A tombstone
// past both horizons is deleted, not compacted.
var pruneCountEffects = `
with ` + pruneActive + `
select (select count(*) from effects e where e.consumer = $1 and ` + pruneEvidenceExpired + ` and ` + pruneUnprotected + `),
       (select count(*) from effects e where e.consumer = $1 and e.state = 'expired' and e.evidence_until < $3 and ` + pruneUnprotected + `)
       + (select count(*) from effect_tombstones t
           where t.consumer_key = (select id from effect_tombstone_consumers where consumer = $1) and ` + pruneCompactOld("$3") + `),
       (select count(*) from effects e where e.consumer = $1 and ` + pruneBodyExpired + ` and ` + pruneUnprotected + `),
       (select count(*) from effects e where e.consumer = $1 and ` + pruneCompactable("$4") + ` and e.evidence_until >= $3
           and ` + pruneUnprotected + `)`

// pruneCompactable is a whole tombstone (alias e) whose evidence ended before horizon and whose
// effect happened: a received one (imported with dates, never run here) keeps its row, which a
// claim racing the move would otherwise find gone.
func pruneCompactable(horizon string) string {
	return `e.state = 'expired' and e.evidence_until < ` + horizon + ` and e.final_state in ('completed', 'reconciled')`
}

// pruneCompactOld is a compact tombstone (alias t) past the tombstone horizon: its stored day is
// the one after evidence_until, so comparing days never deletes one early.
func pruneCompactOld(horizon string) string {
	return `t.evidence_until < (` + horizon + `::timestamptz at time zone 'UTC')::date`
}

const pruneCountIncidents = `select count(*) from effect_incidents where at < $2 and ($1::text is null or consumer = $1)`

// A batch is the oldest $3 rows of consumer $1 that its step can act on. A changed row leaves the
// step's index (a tombstone is no longer settled, a deleted row is gone, a cleared body is null),
// so the next batch starts where this one ended without a cursor; a protected row is passed over
// again by each batch, and there are only as many as the active jobs hold. The modifying
// statement checks the conditions again on the row it locks, in case the row changed since the
// batch read it.
const pruneBatchHead = `
with ` + pruneActive + `,
batch as (
    select e.consumer, e.event_id, e.effect_version from effects e
     where e.consumer = $1 and `

const pruneBatchTail = `
select (select count(*) from pruned), (select count(*) from batch)`

const pruneBatchKey = `e.consumer = b.consumer and e.event_id = b.event_id and e.effect_version = b.effect_version`

// The tombstone keeps what proves the event was handled (request and result hashes, final state,
// outcome kind, effect count, external refs, job, dates) and drops what it no longer may keep:
// the body and every free text (last_error, review_note). In SET, e.state is the row's old state.
const pruneTombstonesBatch = pruneBatchHead + pruneEvidenceExpired + ` and ` + pruneUnprotected + `
     order by e.evidence_until
     limit $3),
pruned as (
    update effects e
       set state = 'expired', final_state = e.state, result_body = null, last_error = null, review_note = null,
           lease_owner = null, lease_expires_at = null
      from batch b
     where ` + pruneBatchKey + ` and ` + pruneEvidenceExpired + `
    returning 1)` + pruneBatchTail

// $2 is the tombstone horizon here.
const pruneOldTombstonesBatch = pruneBatchHead + pruneTombstoneOld + ` and ` + pruneUnprotected + `
     order by e.evidence_until
     limit $3),
pruned as (
    delete from effects e using batch b
     where ` + pruneBatchKey + ` and ` + pruneTombstoneOld + `
    returning 1)` + pruneBatchTail

// result_hash stays: it is the evidence a later replay or shadow compares with. updated_at is the
// row's last outcome and stays too.
const pruneBodiesBatch = pruneBatchHead + pruneBodyExpired + ` and ` + pruneUnprotected + `
     order by e.replay_until
     limit $3),
pruned as (
    update effects e set result_body = null from batch b
     where ` + pruneBatchKey + ` and ` + pruneBodyExpired + `
    returning 1)` + pruneBatchTail

// pruneCompactBatch moves the oldest $3 whole tombstones of consumer $1 whose evidence ended
// before $2 to their compact form: one statement deletes the rows and inserts their compact
// tombstones, so every reader sees either (a reader of the event renders the compact one as the
// expired row it was). Every moved row gets its compact tombstone, even when one with the same key
// and version is there already (the same version moved before, reopened and expired again, or
// another event whose key collides on 8 bytes): skipping it could lose a tombstone to a
// collision, while a duplicate costs 94 bytes and the readers take each version once.
var pruneCompactBatch = pruneBatchHead + pruneCompactable("$2") + ` and ` + pruneUnprotected + `
     order by e.evidence_until
     limit $3),
moved as (
    delete from effects e using batch b
     where ` + pruneBatchKey + ` and ` + pruneCompactable("$2") + `
    returning e.consumer, e.event_id, e.effect_version, e.evidence_until, e.final_state, e.write_forbidden, e.outcome_kind),
compacted as (
    insert into effect_tombstones (key, effect_version, consumer_key, evidence_until, flags)
    select effect_tombstone_key(m.consumer, m.event_id), m.effect_version,
           (select id from effect_tombstone_consumers where consumer = $1),
           (m.evidence_until at time zone 'UTC')::date + 1,
           (case m.final_state when 'reconciled' then ` + fmt.Sprint(compactFlagReconciled) + ` else ` + fmt.Sprint(compactFlagCompleted) + ` end)
           | (case when m.write_forbidden then ` + fmt.Sprint(compactFlagWriteForbidden) + ` else 0 end)
           | (case when m.outcome_kind = 'business' then ` + fmt.Sprint(compactFlagBusiness) + ` else 0 end)
      from moved m
    returning 1)
select (select count(*) from moved), (select count(*) from batch)`

// pruneRegisterTombstoneConsumer numbers consumer $1 for its compact tombstones' consumer_key.
const pruneRegisterTombstoneConsumer = `
insert into effect_tombstone_consumers (consumer)
select $1 where not exists (select 1 from effect_tombstone_consumers where consumer = $1)
on conflict (consumer) do nothing`

// pruneOldCompactBatch deletes the oldest $3 compact tombstones of consumer $1 past the tombstone
// horizon $2.
var pruneOldCompactBatch = `
with batch as (
    select ctid from effect_tombstones t
     where t.consumer_key = (select id from effect_tombstone_consumers where consumer = $1) and ` + pruneCompactOld("$2") + `
     order by t.evidence_until
     limit $3),
pruned as (
    delete from effect_tombstones t using batch b where t.ctid = b.ctid and ` + pruneCompactOld("$2") + `
    returning 1)
select (select count(*) from pruned), (select count(*) from batch)`

const pruneIncidentsBatch = `
with pruned as (
    delete from effect_incidents
     where id in (select id from effect_incidents where at < $2 and ($1::text is null or consumer = $1) order by id limit $3)
    returning 1)
select count(*) from pruned`

// PruneCount reports what Prune would remove with opts, changing nothing. AsOf may lie in the
// future (what would go by then). Each consumer's counts read the partial indexes of the rows due,
// without the pool's statement timeout (ctx bounds them).
func (s *Store) PruneCount(ctx context.Context, opts PruneOptions) (*PruneReport, error) {
	r, err := s.pruneStart(ctx, &opts, true)
	if err != nil {
		return nil, err
	}
	consumers, err := s.pruneConsumers(ctx, opts)
	if err != nil {
		return nil, err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The planner cannot know that the rows past a date are nearly all tombstones (the state and
		// the date are correlated), so it estimates a fifth of the ledger due and scans all of it;
		// the counts read the partial indexes whatever it estimates, and JIT (a third of a second
		// of compiling at 10 M rows) is not worth it for a count over an index range.
		if _, err := tx.Exec(ctx, "set local statement_timeout = 0; set local enable_seqscan = off; set local jit = off"); err != nil {
			return err
		}
		for _, consumer := range consumers {
			c := PruneCounts{Consumer: consumer}
			if err := s.tombstoneHorizon(ctx, opts, r, &c); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, pruneCountEffects, consumer, r.AsOf, c.TombstonesBefore, nullableTime(r.CompactBefore)).
				Scan(&c.Tombstoned, &c.Rows, &c.Bodies, &c.Compacted); err != nil {
				return err
			}
			if c.changes() > 0 {
				r.Consumers = append(r.Consumers, c)
			}
		}
		if err := tx.QueryRow(ctx, pruneCountPartitionedBodies, r.AsOf).Scan(&r.PartitionedBodies); err != nil {
			return err
		}
		return tx.QueryRow(ctx, pruneCountIncidents, nullable(opts.Consumer), r.IncidentsBefore).Scan(&r.Incidents)
	})
	if err != nil {
		return nil, fmt.Errorf("count what ledger prune would remove for %s: %w", r.scope(), err)
	}
	for _, c := range r.Consumers {
		r.Total.add(c)
	}
	return r, nil
}

// pruneConsumers is the consumer opts names, or every consumer with effects rows.
func (s *Store) pruneConsumers(ctx context.Context, opts PruneOptions) ([]string, error) {
	if !opts.AllConsumers {
		return []string{opts.Consumer}, nil
	}
	return s.EffectsConsumers(ctx)
}

// Where a consumer's tombstone retention comes from (PruneCounts.TombstoneRetentionFrom).
const (
	TombstoneRetentionFromOption  = "option"
	TombstoneRetentionFromPolicy  = "policy"
	TombstoneRetentionFromDefault = "default"
)

// tombstoneHorizon sets c's tombstone horizon: as-of minus opts.TombstoneRetention when given,
// else minus the retention the consumer registered, else minus DefaultTombstoneRetention.
func (s *Store) tombstoneHorizon(ctx context.Context, opts PruneOptions, r *PruneReport, c *PruneCounts) error {
	retention, from := opts.TombstoneRetention, TombstoneRetentionFromOption
	if retention <= 0 {
		policies, err := s.RetentionPoliciesList(ctx, apikey.PolicyConsumer, c.Consumer)
		if err != nil {
			return fmt.Errorf("read the tombstone retention consumer %s registered: %w", c.Consumer, err)
		}
		retention, from = DefaultTombstoneRetention, TombstoneRetentionFromDefault
		if len(policies) == 1 && policies[0].TombstoneWindow > 0 {
			retention, from = policies[0].TombstoneWindow, TombstoneRetentionFromPolicy
		}
	}
	c.TombstonesBefore, c.TombstoneRetentionFrom = r.AsOf.Add(-retention), from
	return nil
}

// Prune deletes the tombstones (whole, then compact) whose evidence_until is more than each
// consumer's tombstone retention behind AsOf, then with CompactAfter moves the older whole
// tombstones to their compact form, then turns the rows whose evidence_until passed into expired
// tombstones, then drops the result bodies whose replay_until passed, then deletes
// effect_incidents older than IncidentRetention, in batches of BatchSize rows, each its own short transaction under the consumer's execute lock (so no job
// starts executing half-way through a batch that might touch its targets). A kill or ctx ending
// mid-way loses nothing: committed batches stay pruned, the batch in flight rolls back, and
// running Prune again continues. It writes one audit entry with the counts, also when stopped
// by ctx or an error (Interrupted). A real prune as of a time after the database's now() matches ErrPruneAsOfFuture.
func (s *Store) Prune(ctx context.Context, opts PruneOptions) (*PruneReport, error) {
	r, err := s.pruneStart(ctx, &opts, false)
	if err != nil {
		return nil, err
	}
	consumers, err := s.pruneConsumers(ctx, opts)
	if err != nil {
		return nil, err
	}
	p := &pruner{store: s, opts: opts, report: r}
	err = p.run(ctx, consumers)
	if err == nil {
		err = s.pruneBodyPartitions(ctx, r)
	}
	if err != nil {
		r.Interrupted = true
		err = fmt.Errorf("ledger prune of %s stopped after %d batches (%d rows tombstoned, %d tombstones, %d bodies, %d incidents pruned): %w; "+
			"every committed batch stays pruned and the one in flight was rolled back: run the same command again to continue",
			r.scope(), r.Batches, r.Total.Tombstoned, r.Total.Rows, r.Total.Bodies, r.Incidents, err)
	}
	if r.Batches > 0 || r.PartitionedBodies > 0 {
		// The audit entry must be written even when ctx ended the run, so it gets its own deadline.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
		defer cancel()
		if aerr := AuditInsert(actx, s.pool, AuditEntry{Actor: opts.Actor, Action: "ledger.prune", Details: r.auditDetails()}); aerr != nil {
			err = errors.Join(err, fmt.Errorf("ledger prune of %s: %w", r.scope(), aerr))
		}
	}
	return r, err
}

// pruneStart checks the schema and the consumer, fills opts' defaults and resolves AsOf with the
// database's clock; a real run (not dryRun) may not look ahead of it.
func (s *Store) pruneStart(ctx context.Context, opts *PruneOptions, dryRun bool) (*PruneReport, error) {
	if (opts.Consumer == "") == !opts.AllConsumers {
		return nil, errors.New("ledger prune: name one consumer, or ask for all consumers, not both")
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultPruneBatchSize
	}
	if err := s.CheckSchema(ctx); err != nil {
		return nil, err
	}
	if !opts.AllConsumers {
		if err := s.CheckConsumer(ctx, opts.Consumer); err != nil {
			return nil, err
		}
	}
	var asOf, now time.Time
	if err := s.pool.QueryRow(ctx, pruneResolveAsOf, nullableTime(opts.AsOf)).Scan(&asOf, &now); err != nil {
		return nil, fmt.Errorf("ledger prune: read the database clock: %w", err)
	}
	if !dryRun && asOf.After(now) {
		return nil, fmt.Errorf("%w: --as-of %s is after the database's clock (%s): a prune then would delete evidence before "+
			"its retention ends; look ahead with --dry-run only", ErrPruneAsOfFuture,
			asOf.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	opts.AsOf = asOf
	r := &PruneReport{DryRun: dryRun, AsOf: asOf, Consumer: opts.Consumer, AllConsumers: opts.AllConsumers, Consumers: []PruneCounts{},
		IncidentsBefore: asOf.Add(-opts.IncidentRetention), TombstonesBefore: asOf.Add(-cmp.Or(opts.TombstoneRetention, DefaultTombstoneRetention)),
		BatchSize: opts.BatchSize}
	if opts.CompactAfter > 0 {
		r.CompactBefore = asOf.Add(-opts.CompactAfter)
	}
	return r, nil
}

func (r *PruneReport) scope() string {
	if r.AllConsumers {
		return "all consumers"
	}
	return "consumer " + r.Consumer
}

func (r *PruneReport) auditDetails() map[string]any {
	perConsumer := map[string]any{}
	for _, c := range r.Consumers {
		perConsumer[c.Consumer] = map[string]any{"tombstoned": c.Tombstoned, "rows": c.Rows, "compacted": c.Compacted, "bodies": c.Bodies,
			"tombstonesBefore": c.TombstonesBefore.UTC().Format(time.RFC3339Nano), "tombstoneRetentionFrom": c.TombstoneRetentionFrom}
	}
	details := map[string]any{
		"scope": r.scope(), "asOf": r.AsOf.UTC().Format(time.RFC3339Nano), "batchSize": r.BatchSize,
		"batches": r.Batches, "tombstoned": r.Total.Tombstoned, "rows": r.Total.Rows, "compacted": r.Total.Compacted, "bodies": r.Total.Bodies,
		"incidents": r.Incidents, "incidentsBefore": r.IncidentsBefore.UTC().Format(time.RFC3339Nano),
		"tombstonesBefore": r.TombstonesBefore.UTC().Format(time.RFC3339Nano), "consumers": perConsumer,
		"interrupted": r.Interrupted, "partitionedBodies": r.PartitionedBodies,
	}
	if !r.CompactBefore.IsZero() {
		details["compactBefore"] = r.CompactBefore.UTC().Format(time.RFC3339Nano)
	}
	return details
}

// pruneBodyPartitions drops the weeks of effect_bodies whose replay windows all ended by the
// run's as-of (a drop each, whatever they hold), and makes the weeks ahead the completions of the
// next months land in. Both run as the schema's owner (migration 0033).
func (s *Store) pruneBodyPartitions(ctx context.Context, r *PruneReport) error {
	if err := s.pool.QueryRow(ctx, `select effect_bodies_drop_before($1)`, r.AsOf).Scan(&r.PartitionedBodies); err != nil {
		return fmt.Errorf("drop the expired weeks of effect_bodies: %w", translate(err))
	}
	if _, err := s.pool.Exec(ctx, `select effect_bodies_ensure(now() + $1::bigint * interval '1 millisecond')`, bodyPartitionsAhead.Milliseconds()); err != nil {
		return fmt.Errorf("make the weeks ahead of effect_bodies: %w", translate(err))
	}
	return nil
}

// pruner runs one real prune's batches and keeps its report current after each commit.
type pruner struct {
	store  *Store
	opts   PruneOptions
	report *PruneReport
}

func (p *pruner) run(ctx context.Context, consumers []string) error {
	for _, consumer := range consumers {
		counts := PruneCounts{Consumer: consumer}
		if err := p.store.tombstoneHorizon(ctx, p.opts, p.report, &counts); err != nil {
			return err
		}
		p.report.Consumers = append(p.report.Consumers, counts)
		c := &p.report.Consumers[len(p.report.Consumers)-1]
		// Old tombstones go before tombstones are compacted, and those before new ones are made,
		// so a row past several horizons takes one step a run, as the dry run counted.
		if err := p.effects(ctx, consumer, pruneOldTombstonesBatch, c.TombstonesBefore, &c.Rows, &p.report.Total.Rows); err != nil {
			return err
		}
		if err := p.effects(ctx, consumer, pruneOldCompactBatch, c.TombstonesBefore, &c.Rows, &p.report.Total.Rows); err != nil {
			return err
		}
		if !p.report.CompactBefore.IsZero() {
			if _, err := p.store.pool.Exec(ctx, pruneRegisterTombstoneConsumer, consumer); err != nil {
				return fmt.Errorf("prune consumer %s: number it for its compact tombstones: %w", consumer, err)
			}
			if err := p.effects(ctx, consumer, pruneCompactBatch, p.report.CompactBefore, &c.Compacted, &p.report.Total.Compacted); err != nil {
				return err
			}
		}
		if err := p.effects(ctx, consumer, pruneTombstonesBatch, p.opts.AsOf, &c.Tombstoned, &p.report.Total.Tombstoned); err != nil {
			return err
		}
		if err := p.effects(ctx, consumer, pruneBodiesBatch, p.opts.AsOf, &c.Bodies, &p.report.Total.Bodies); err != nil {
			return err
		}
		if c.changes() == 0 {
			p.report.Consumers = p.report.Consumers[:len(p.report.Consumers)-1]
		}
	}
	return p.incidents(ctx)
}

// effects runs batches of query, judged at horizon, over consumer's rows until one comes back
// short, adding what each changed to both counters.
func (p *pruner) effects(ctx context.Context, consumer, query string, horizon time.Time, perConsumer, total *int64) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var changed, read int64
		err := pgx.BeginFunc(ctx, p.store.pool, func(tx pgx.Tx) error {
			if err := LockConsumerExecutions(ctx, tx, consumer); err != nil {
				return err
			}
			return tx.QueryRow(ctx, query, consumer, horizon, p.opts.BatchSize).Scan(&changed, &read)
		})
		if err != nil {
			return fmt.Errorf("prune consumer %s after %d rows: %w", consumer, *perConsumer, err)
		}
		if read == 0 {
			return nil
		}
		p.committed(changed, perConsumer, total)
		// A full batch that changed nothing was changed by others since it was read: without a
		// cursor, the next batch could read the same rows again.
		if read < int64(p.opts.BatchSize) || changed == 0 {
			return nil
		}
	}
}

func (p *pruner) incidents(ctx context.Context) error {
	consumer := nullable(p.opts.Consumer)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var changed int64
		if err := p.store.pool.QueryRow(ctx, pruneIncidentsBatch, consumer, p.report.IncidentsBefore, p.opts.BatchSize).Scan(&changed); err != nil {
			return fmt.Errorf("prune the incidents of %s: %w", p.report.scope(), err)
		}
		if changed == 0 {
			return nil
		}
		p.committed(changed, &p.report.Incidents)
		if changed < int64(p.opts.BatchSize) {
			return nil
		}
	}
}

// committed counts a committed batch and reports progress.
func (p *pruner) committed(changed int64, counters ...*int64) {
	p.report.Batches++
	for _, c := range counters {
		*c += changed
	}
	if p.opts.Progress != nil {
		p.opts.Progress(p.report.Changes(), p.opts.Expected)
	}
}

func (c *PruneCounts) add(o PruneCounts) {
	c.Tombstoned += o.Tombstoned
	c.Rows += o.Rows
	c.Compacted += o.Compacted
	c.Bodies += o.Bodies
}

func (c *PruneCounts) changes() int64 {
	return c.Tombstoned + c.Rows + c.Compacted + c.Bodies
}
