package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// JobsFilter narrows JobsList; zero fields do not filter.
type JobsFilter struct {
	Consumer string
	Status   string
	// Since keeps jobs planned or moved to another status at or after it.
	Since time.Time
	// Limit caps the rows, newest first; 0 means no cap.
	Limit int
}

// JobListed is a job with the figures a list of jobs shows: its targets by status and its replay's
// ledger rows, the inputs status reads one job at a time.
type JobListed struct {
	Job
	TargetCounts map[string]int64
	Effects      JobEffectCounts
}

// One round trip whatever the number of jobs: the page is chosen first, and each job's counts are
// aggregated by a lateral join through job_targets' primary key and
// effects_consumer_version_job_idx, so a long history costs only the jobs shown.
const jobsList = `
with page as (
    select *
      from jobs
     where ($1::text is null or consumer = $1)
       and ($2::text is null or status = $2)
       and ($3::timestamptz is null or coalesce(status_at, created_at) >= $3)
     order by created_at desc, id desc
     limit $4)
select ` + jobColumns + `,
       coalesce(tc.counts, '{}'::jsonb),
       ec.completed, ec.business_failed, ec.uncertain, ec.processing, ec.retrying, ec.settled_calls, ec.in_flight_calls
  from page
  left join lateral (
        select jsonb_object_agg(s.target_status, s.n) as counts
          from (select t.status as target_status, count(*) as n
                  from job_targets t
                 where t.job_id = page.id
                 group by t.status) s) tc on true
  cross join lateral (
        select count(*) filter (where e.state = 'reconciled' or (e.state = 'completed' and e.outcome_kind is distinct from 'business')) as completed,
               count(*) filter (where e.state = 'completed' and e.outcome_kind = 'business') as business_failed,
               count(*) filter (where e.state = 'uncertain') as uncertain,
               count(*) filter (where e.state = 'processing') as processing,
               count(*) filter (where e.state = 'received'
                                  and not exists (select 1 from job_targets t
                                                   where t.job_id = page.id and t.event_id = e.event_id and t.status = 'failed')) as retrying,
               coalesce(sum(greatest(e.effect_count, e.calls_started)) filter (where e.state in ('completed', 'reconciled', 'uncertain')), 0) as settled_calls,
               coalesce(sum(e.calls_started) filter (where e.state = 'processing'), 0) as in_flight_calls
          from effects e
         where e.consumer = page.consumer and e.effect_version = page.effect_version_to and e.job_id = page.id) ec
 order by page.created_at desc, page.id desc`

// JobsList returns the jobs f selects, newest first, each with its counts, in one query. A read,
// so it is sent again after a lost connection.
func (s *Store) JobsList(ctx context.Context, f JobsFilter) ([]JobListed, error) {
	var limit any
	if f.Limit > 0 {
		limit = f.Limit
	}
	var jobs []JobListed
	_, err := retryLostConnection(ctx, func() error {
		rows, err := s.pool.Query(ctx, jobsList, nullable(f.Consumer), nullable(f.Status), nullableTime(f.Since), limit)
		if err != nil {
			return err
		}
		jobs, err = pgx.CollectRows(rows, scanJobListed)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}

func scanJobListed(row pgx.CollectableRow) (JobListed, error) {
	var l JobListed
	c := &l.Effects
	job, err := jobScan(row, &l.TargetCounts, &c.Completed, &c.BusinessFailed, &c.Uncertain, &c.Processing,
		&c.Retrying, &c.SettledCalls, &c.InFlightCalls)
	l.Job = job
	return l, err
}
