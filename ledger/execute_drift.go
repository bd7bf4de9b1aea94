package ledger

import (
	"context"
	"fmt"
)

// Drift kinds: what a target's ledger rows show that they did not show at plan time.
const (
	DriftCompleted = "completed" // completed or reconciled under some version since plan
	DriftUncertain = "uncertain" // uncertain, or a processing lease that lapsed
	DriftInFlight  = "in_flight" // a live lease is held on it right now
	DriftConflict  = "conflict"  // a row with another payload fingerprint appeared
	DriftChanged   = "changed"   // anything else (received, expired)
)

// DriftTarget is one target whose ledger rows changed since plan.
type DriftTarget struct {
	EventID string
	// Kind is one of the Drift constants.
	Kind string
	// Planned and Current render the rows as "version:state:request_hash,..." (empty: none).
	Planned string
	Current string
}

// DriftSummary compares the unsettled targets of a job with their ledger rows at plan time.
type DriftSummary struct {
	// Checked is how many targets were compared (pending, shadowed or published).
	Checked int64
	// Drifted is how many of them changed; ByKind splits it by Drift kind.
	Drifted int64
	ByKind  map[string]int64
	// Examples are the first drifted targets by event ID, at most the examples asked for.
	Examples []DriftTarget
}

// driftRowsOfTarget selects the effects rows (alias e) a target t's drift is judged on: consumer
// $2's rows of the event, leaving out job $1's own rows under its version $3.
const driftRowsOfTarget = `e.consumer = $2 and e.event_id = t.event_id and (e.effect_version <> $3 or e.job_id is distinct from $1)`

// jobTargetsDriftRows is one row per unsettled target of job $1: its rows at plan time and now
// (driftRowsOfTarget), rendered alike (ledgerStatesAgg), and its drift kind, NULL when the two
// renderings agree. The rendering is one join and group by, like plan's classification; grouping
// by job_targets' primary key lets the target's own columns be read directly. The kind is looked
// up only for a drifted target, by the CASE's subqueries (few rows, each on the effects primary
// key), which keeps the pass over a million unchanged targets to the rendering alone. $4 is the
// hash algorithm whose fingerprints compare with payload_hash (a target planned before migration
// 0002 has none, and never conflicts). JobTargetsDrift and JobTargetsSkipDrifted both read it,
// so a skipped target is exactly a reported one.
const jobTargetsDriftRows = `
select t.event_id, t.planned, t.current,
       case when t.current = t.planned then null
            when exists (select from effects e
                          where ` + driftRowsOfTarget + `
                            and e.request_hash_alg = $4 and e.request_hash <> t.payload_hash)
                 then 'conflict'
            else coalesce((select case when e.state in ('completed', 'reconciled') then 'completed'
                                       when e.state = 'uncertain'
                                         or (e.state = 'processing'
                                             and (e.lease_expires_at is null or e.lease_expires_at <= now()))
                                            then 'uncertain'
                                       when e.state = 'processing' then 'in_flight'
                                       else 'changed' end
                             from effects e
                            where ` + driftRowsOfTarget + `
                            order by e.updated_at desc, e.effect_version desc
                            limit 1),
                          'changed') end as kind
  from (select t.event_id, t.payload_hash,
               coalesce(t.planned_states, '') as planned,
               coalesce(` + ledgerStatesAgg + `, '') as current
          from job_targets t
          left join effects e on ` + driftRowsOfTarget + `
         where t.job_id = $1 and t.status in ('pending', 'shadowed', 'published')
         group by t.job_id, t.event_id) t`

// The CTE is read three times and so computed once; the rows are tagged: the checked total, one
// row per drift kind, then the examples.
const jobTargetsDrift = `
with drift as (` + jobTargetsDriftRows + `),
     drifted as (select * from drift where kind is not null)
select 'checked', '', count(*), '', '', '' from drift
union all
select 'kind', kind, count(*), '', '', '' from drifted group by kind
union all
(select 'example', kind, 0::bigint, event_id, planned, current from drifted order by event_id collate "C" limit $5)`

// JobTargetsDrift compares each pending, shadowed or published target of jobID with its ledger
// rows at plan time (job_targets.planned_states): the rows of consumer now, leaving out those
// under version that belong to jobID (the job's own replay), rendered like the plan rendered
// them. A drifted target's kind is decided in this order: a row whose request_hash_alg is hashAlg
// and whose request_hash differs from the target's payload_hash is a conflict; otherwise the
// kind follows the most recently updated row (completed/reconciled -> completed; uncertain or a
// lapsed processing lease -> uncertain; a live lease -> in_flight; else changed), or changed when
// the planned rows are gone. Examples holds at most examples targets, by event ID in byte order.
// One query.
func (s *Store) JobTargetsDrift(ctx context.Context, jobID, consumer string, version int, hashAlg string, examples int) (DriftSummary, error) {
	rows, err := s.pool.Query(ctx, jobTargetsDrift, jobID, consumer, version, hashAlg, max(examples, 0))
	if err != nil {
		return DriftSummary{}, fmt.Errorf("compare the targets of job %s with their ledger rows at plan time: %w", jobID, err)
	}
	sum := DriftSummary{ByKind: map[string]int64{}}
	var tag, kind, eventID, planned, current string
	var n int64
	for rows.Next() {
		if err := rows.Scan(&tag, &kind, &n, &eventID, &planned, &current); err != nil {
			rows.Close()
			return DriftSummary{}, fmt.Errorf("compare the targets of job %s with their ledger rows at plan time: %w", jobID, err)
		}
		switch tag {
		case "checked":
			sum.Checked = n
		case "kind":
			sum.ByKind[kind] = n
			sum.Drifted += n
		case "example":
			sum.Examples = append(sum.Examples, DriftTarget{EventID: eventID, Kind: kind, Planned: planned, Current: current})
		}
	}
	if err := rows.Err(); err != nil {
		return DriftSummary{}, fmt.Errorf("compare the targets of job %s with their ledger rows at plan time: %w", jobID, err)
	}
	return sum, nil
}

// The update re-checks the status on the row it locks, so a target settled meanwhile stays settled.
const jobTargetsSkipDrifted = `
with drift as (` + jobTargetsDriftRows + `)
update job_targets t
   set status = 'skipped', outcome_detail = 'drifted since plan: ' || d.kind, updated_at = now()
  from drift d
 where t.job_id = $1 and t.event_id = d.event_id and d.kind is not null
   and t.status in ('pending', 'shadowed', 'published')`

// JobTargetsSkipDrifted marks every target JobTargetsDrift would report as drifted skipped,
// through q, with outcome_detail "drifted since plan: <kind>", and returns how many it marked.
// One statement.
func JobTargetsSkipDrifted(ctx context.Context, q Querier, jobID, consumer string, version int, hashAlg string) (int64, error) {
	tag, err := q.Exec(ctx, jobTargetsSkipDrifted, jobID, consumer, version, hashAlg)
	if err != nil {
		return 0, fmt.Errorf("skip the targets of job %s whose ledger rows changed since plan: %w", jobID, err)
	}
	return tag.RowsAffected(), nil
}
