package ledger

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/apikey"
)

// APIKeysPruneOptions says what `replayctl keys prune` removes; the rules are ledger prune's.
type APIKeysPruneOptions struct {
	// Route restricts the prune to one route; empty prunes every route.
	Route string
	// AsOf is when expiry is judged; zero means the database's now().
	AsOf time.Time
	// TombstoneRetention keeps every route's tombstones until their evidence_until is this far
	// behind AsOf; 0 means each route's registered retention (idempotency.Route.TombstoneRetention),
	// or DefaultTombstoneRetention where it registered none.
	TombstoneRetention time.Duration
	// CountsRetention keeps the daily counts younger than AsOf minus it; 0 keeps them all.
	CountsRetention time.Duration
	// CompactAfter gives a tombstone whose evidence_until is this far behind AsOf its compact form
	// (api_key_tombstones), and a later prune deletes its whole row; 0 compacts nothing. Off
	// unless asked, as for ledger prune: a middleware older than migration 0038 reads api_keys
	// only and would run a request with a compacted key as a first one.
	CompactAfter time.Duration
	// BatchSize caps the rows one statement changes; 0 means DefaultPruneBatchSize.
	BatchSize int
	DryRun    bool
	Actor     string
}

// APIKeysPruneReport says what a prune of API records removed, or would remove.
type APIKeysPruneReport struct {
	DryRun bool      `json:"dryRun"`
	AsOf   time.Time `json:"asOf"`
	Route  string    `json:"route,omitempty"`
	// Bodies are sealed responses dropped because replay_until passed.
	Bodies int64 `json:"bodies"`
	// Tombstoned are records turned into expired tombstones because evidence_until passed.
	Tombstoned int64 `json:"tombstoned"`
	// Rows are tombstones deleted because evidence_until is more than the retention behind.
	Rows int64 `json:"rows"`
	// DailyCounts are daily count rows older than the counts retention.
	DailyCounts int64 `json:"dailyCounts"`
	// Compacted are tombstones given their compact form because evidence_until is more than the
	// compaction age behind; WholeRowsDropped are whole tombstones deleted because their compact
	// form was written at least an hour before (an earlier prune's Compacted).
	Compacted        int64 `json:"compacted"`
	WholeRowsDropped int64 `json:"wholeRowsDropped"`
	// CompactBefore is as-of minus CompactAfter; absent when compaction is off.
	CompactBefore time.Time `json:"compactBefore,omitzero"`
	// TombstonesBefore is the horizon of the routes without a registered tombstone retention (of
	// every route with TombstoneRetention); Routes holds the registered ones' own.
	TombstonesBefore time.Time             `json:"tombstonesBefore"`
	Routes           []APIKeysRouteHorizon `json:"routes"`
}

// APIKeysRouteHorizon is a route's own tombstone horizon: as-of minus the tombstone retention
// the route registered.
type APIKeysRouteHorizon struct {
	Route            string    `json:"route"`
	TombstonesBefore time.Time `json:"tombstonesBefore"`
}

// Processing and uncertain records are never touched: their outcome is still being decided.
// Each condition takes its horizon as $1 and the route (empty: every route) as $2, and is written
// as the predicate of its partial index (migration 0036), which holds only the records the step
// can act on: a prune reads the records due, oldest first, not the table.
const (
	apiKeysPruneBodiesWhere    = `response_sealed is not null and state in ('completed', 'reconciled') and replay_until <= $1 and ($2 = '' or route = $2)`
	apiKeysPruneTombstoneWhere = `state in ('completed', 'reconciled') and evidence_until <= $1 and ($2 = '' or route = $2)`
	// $3 (in the batch statement $4, after the batch size) are the routes pruned at a horizon of
	// their own, left out of this one.
	apiKeysPruneDeleteWhere = `state = 'expired' and evidence_until <= $1 and ($2 = '' or route = $2) and not (route = any($3::text[]))`
	apiKeysPruneDailyWhere  = `day < $1::date and ($2 = '' or route = $2)`
	// Each batch locks at most $3 rows, oldest first by the step's date, and skips those another
	// prune holds.
	apiKeysPruneBatch = ` (select scope_hash, key_hash from api_keys where %s order by %s limit $3 for update skip locked) b where k.scope_hash = b.scope_hash and k.key_hash = b.key_hash`
)

var (
	apiKeysPruneBodies     = `update api_keys k set response_sealed = null, response_key_id = null from` + fmt.Sprintf(apiKeysPruneBatch, apiKeysPruneBodiesWhere, "replay_until")
	apiKeysPruneTombstones = `update api_keys k set state = 'expired', response_sealed = null, response_key_id = null, response_status = null, note = null, lease_owner = null from` + fmt.Sprintf(apiKeysPruneBatch, apiKeysPruneTombstoneWhere, "evidence_until")
	apiKeysPruneDelete     = `delete from api_keys k using` + fmt.Sprintf(apiKeysPruneBatch, strings.Replace(apiKeysPruneDeleteWhere, "$3", "$4", 1), "evidence_until")
	apiKeysPruneDaily      = `delete from api_key_daily where ` + apiKeysPruneDailyWhere
)

// apiKeysPruneCount counts what a step would change: the table and condition of the step.
func apiKeysPruneCount(table, where string) string {
	return `select count(*) from ` + table + ` where ` + where
}

// APIKeysPrune drops sealed responses past replay_until, turns records past evidence_until into
// tombstones and deletes tombstones past the retention, in batches of BatchSize rows that each
// commit on their own (an interrupted prune loses nothing: run it again). A dry run only counts.
func (s *Store) APIKeysPrune(ctx context.Context, o APIKeysPruneOptions) (*APIKeysPruneReport, error) {
	if o.AsOf.IsZero() {
		now, err := s.DatabaseNow(ctx)
		if err != nil {
			return nil, err
		}
		o.AsOf = now
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultPruneBatchSize
	}
	r := &APIKeysPruneReport{DryRun: o.DryRun, AsOf: o.AsOf, Route: o.Route, Routes: []APIKeysRouteHorizon{},
		TombstonesBefore: o.AsOf.Add(-cmp.Or(o.TombstoneRetention, DefaultTombstoneRetention))}
	countsBefore := time.Time{}
	if o.CountsRetention > 0 {
		countsBefore = o.AsOf.Add(-o.CountsRetention)
	}
	steps := []apiKeysPruneStep{
		{where: apiKeysPruneBodiesWhere, query: apiKeysPruneBodies, horizon: o.AsOf, route: o.Route, into: &r.Bodies},
		{where: apiKeysPruneTombstoneWhere, query: apiKeysPruneTombstones, horizon: o.AsOf, route: o.Route, into: &r.Tombstoned},
	}
	if o.CompactAfter > 0 {
		r.CompactBefore = o.AsOf.Add(-o.CompactAfter)
		steps = append(steps,
			apiKeysPruneStep{where: apiKeysCompactWhere, before: apiKeysRegisterTombstoneRoutes, query: apiKeysCompactBatch,
				horizon: r.CompactBefore, route: o.Route, into: &r.Compacted},
			apiKeysPruneStep{where: apiKeysDropWholeWhere, query: apiKeysDropWholeBatch, horizon: r.CompactBefore, route: o.Route,
				into: &r.WholeRowsDropped})
	}
	deletes, err := s.apiKeysTombstoneSteps(ctx, o, r)
	if err != nil {
		return nil, err
	}
	steps = append(steps, deletes...)
	if o.DryRun {
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			// As for ledger prune's counts: the planner cannot see that the records past a date are
			// nearly all tombstones, and would scan the table.
			if _, err := tx.Exec(ctx, "set local enable_seqscan = off; set local jit = off"); err != nil {
				return err
			}
			for _, step := range steps {
				var n int64
				if err := tx.QueryRow(ctx, apiKeysPruneCount(cmp.Or(step.table, "api_keys"), step.where), step.args()...).Scan(&n); err != nil {
					return fmt.Errorf("count the API records to prune: %w", err)
				}
				*step.into += n
			}
			if !countsBefore.IsZero() {
				if err := tx.QueryRow(ctx, apiKeysPruneCount("api_key_daily", apiKeysPruneDailyWhere), countsBefore, o.Route).Scan(&r.DailyCounts); err != nil {
					return fmt.Errorf("count the API key counts to prune: %w", err)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	for _, step := range steps {
		if step.before != "" {
			if _, err := s.pool.Exec(ctx, step.before, step.horizon, step.route); err != nil {
				return r, fmt.Errorf("prune API records (%d bodies, %d tombstoned so far; run it again to continue): %w",
					r.Bodies, r.Tombstoned, err)
			}
		}
		for {
			tag, err := s.pool.Exec(ctx, step.query, step.args(o.BatchSize)...)
			if err != nil {
				return r, fmt.Errorf("prune API records (%d bodies, %d tombstoned, %d deleted so far; run it again to continue): %w",
					r.Bodies, r.Tombstoned, r.Rows, err)
			}
			*step.into += tag.RowsAffected()
			if tag.RowsAffected() < int64(o.BatchSize) {
				break
			}
		}
	}
	if !countsBefore.IsZero() {
		if err := s.pruneDailyCounts(ctx, countsBefore, o.Route, r); err != nil {
			return r, err
		}
	}
	if r.Bodies+r.Tombstoned+r.Rows+r.DailyCounts+r.Compacted+r.WholeRowsDropped > 0 {
		err := AuditInsert(ctx, s.pool, AuditEntry{Actor: o.Actor, Action: "keys-prune", Details: map[string]any{
			"route": o.Route, "asOf": o.AsOf, "bodies": r.Bodies, "tombstoned": r.Tombstoned, "rows": r.Rows, "dailyCounts": r.DailyCounts,
			"compacted": r.Compacted, "wholeRowsDropped": r.WholeRowsDropped}})
		if err != nil {
			return r, fmt.Errorf("record the prune in the audit log: %w", err)
		}
	}
	return r, nil
}

// pruneDailyCounts removes the daily counts before before (migration 0037): for every route, the
// weeks wholly before it leave by dropping their partitions, and the days before it in the
// partitions that stay (its own week's, the default's) by a row delete that reads only those
// days; for one route, by the row delete alone (a partition holds every route's days). Then the
// weeks ahead are made, as migrate made them.
func (s *Store) pruneDailyCounts(ctx context.Context, before time.Time, route string, r *APIKeysPruneReport) error {
	if route == "" {
		if err := s.pool.QueryRow(ctx, `select api_key_daily_drop_before($1::date)`, before).Scan(&r.DailyCounts); err != nil {
			return fmt.Errorf("drop the API key counts' partitions before %s: %w", before.Format(time.DateOnly), err)
		}
	}
	tag, err := s.pool.Exec(ctx, apiKeysPruneDaily, before, route)
	if err != nil {
		return fmt.Errorf("prune the API key counts (%d removed so far; run it again to continue): %w", r.DailyCounts, err)
	}
	r.DailyCounts += tag.RowsAffected()
	if _, err := s.pool.Exec(ctx, `select api_key_daily_ensure((now() at time zone 'UTC')::date, (now() at time zone 'UTC')::date + $1::integer)`, dailyPartitionsAheadDays); err != nil {
		return fmt.Errorf("make the API key counts' partitions ahead: %w", err)
	}
	return nil
}

// dailyPartitionsAheadDays is how far ahead each keys prune makes the counts' weekly partitions,
// as ledger prune does the bodies' (bodyPartitionsAhead): a fleet that prunes weekly never writes
// into the default partition.
const dailyPartitionsAheadDays = 120

// apiKeysPruneStep is one step of APIKeysPrune: its condition (for the count), its batch statement,
// its horizon, its route (empty: every route) and, for a deletion of tombstones, the routes it
// leaves to a horizon of their own.
type apiKeysPruneStep struct {
	where, query string
	// table is what where reads, when not api_keys; before runs once ahead of the batches (horizon, route).
	table, before string
	horizon       time.Time
	route         string
	exclude       []string
	deletes       bool
	into          *int64
}

// args are the step's parameters: horizon, route, then the batch size when given, then the routes
// left out for a deletion.
func (st apiKeysPruneStep) args(batch ...int) []any {
	out := []any{st.horizon, st.route}
	for _, b := range batch {
		out = append(out, b)
	}
	if st.deletes {
		// Never nil: a NULL array would make "not (route = any(...))" NULL and delete nothing.
		out = append(out, append([]string{}, st.exclude...))
	}
	return out
}

// apiKeysTombstoneSteps are the deletions of tombstones past their retention: with
// o.TombstoneRetention one for every route; otherwise one per route that registered its own
// (idempotency.Route.TombstoneRetention), then one for the others at the default.
func (s *Store) apiKeysTombstoneSteps(ctx context.Context, o APIKeysPruneOptions, r *APIKeysPruneReport) ([]apiKeysPruneStep, error) {
	// A horizon deletes the whole tombstones past it and the compact ones.
	step := func(horizon time.Time, route string, exclude []string) []apiKeysPruneStep {
		return []apiKeysPruneStep{
			{where: apiKeysPruneDeleteWhere, query: apiKeysPruneDelete, horizon: horizon, route: route,
				exclude: exclude, deletes: true, into: &r.Rows},
			{where: apiKeysCompactOldWhere, table: "api_key_tombstones t", query: apiKeysCompactOldBatch, horizon: horizon, route: route,
				exclude: exclude, deletes: true, into: &r.Rows},
		}
	}
	if o.TombstoneRetention > 0 {
		return step(r.TombstonesBefore, o.Route, nil), nil
	}
	policies, err := s.RetentionPoliciesList(ctx, apikey.PolicyRoute, o.Route)
	if err != nil {
		return nil, fmt.Errorf("read the routes' registered tombstone retention: %w", err)
	}
	var steps []apiKeysPruneStep
	var registered []string
	for _, p := range policies {
		if p.TombstoneWindow <= 0 {
			continue
		}
		horizon := o.AsOf.Add(-p.TombstoneWindow)
		steps = append(steps, step(horizon, p.Name, nil)...)
		registered = append(registered, p.Name)
		r.Routes = append(r.Routes, APIKeysRouteHorizon{Route: p.Name, TombstonesBefore: horizon})
	}
	return append(steps, step(r.TombstonesBefore, o.Route, registered)...), nil
}
