package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/approval"
)

const approvalPoliciesUpsert = `
insert into approval_policies (consumer, approvals, unless_write_forbidden, when_calls_over, valid_for_seconds, set_by,
                               allowed_signers, require_signed_plan)
values ($1, $2, $3, $4, $5, $6, nullif($7, ''), $8)
on conflict (consumer) do update set approvals = excluded.approvals, unless_write_forbidden = excluded.unless_write_forbidden,
       when_calls_over = excluded.when_calls_over, valid_for_seconds = excluded.valid_for_seconds,
       set_by = excluded.set_by, set_at = now(), allowed_signers = excluded.allowed_signers,
       require_signed_plan = excluded.require_signed_plan
returning set_at`

// ApprovalPoliciesSet stores p as its consumer's policy, replacing any, with the audit entry the
// caller worded, in one transaction; it returns p with the time it was set.
func (s *Store) ApprovalPoliciesSet(ctx context.Context, p approval.Policy, audit AuditEntry) (approval.Policy, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, approvalPoliciesUpsert, p.Consumer, p.Approvals, p.UnlessWriteForbidden, p.WhenCallsOver,
			p.ValidFor().Seconds(), p.SetBy, p.AllowedSigners, p.RequireSignedPlan).Scan(&p.SetAt); err != nil {
			return fmt.Errorf("store the approval policy of consumer %s: %w", p.Consumer, translate(err))
		}
		return AuditInsert(ctx, tx, audit)
	})
	p.ValidForSeconds = p.ValidFor().Seconds()
	return p, err
}

const approvalPoliciesList = `
select consumer, approvals, unless_write_forbidden, when_calls_over, valid_for_seconds, set_by, set_at,
       coalesce(allowed_signers, ''), require_signed_plan
  from approval_policies where $1 = '' or consumer = $1 order by consumer`

// ApprovalPoliciesList returns the policy of consumer, or every policy for "".
func (s *Store) ApprovalPoliciesList(ctx context.Context, consumer string) ([]approval.Policy, error) {
	rows, err := s.pool.Query(ctx, approvalPoliciesList, consumer)
	if err != nil {
		return nil, fmt.Errorf("read approval policies: %w", translate(err))
	}
	policies, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (approval.Policy, error) {
		var p approval.Policy
		err := r.Scan(&p.Consumer, &p.Approvals, &p.UnlessWriteForbidden, &p.WhenCallsOver, &p.ValidForSeconds, &p.SetBy, &p.SetAt, &p.AllowedSigners, &p.RequireSignedPlan)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("read approval policies: %w", translate(err))
	}
	return policies, nil
}

// ApprovalPoliciesGet returns consumer's policy, nil when it has none.
func (s *Store) ApprovalPoliciesGet(ctx context.Context, consumer string) (*approval.Policy, error) {
	ps, err := s.ApprovalPoliciesList(ctx, consumer)
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	return &ps[0], nil
}

const approvalsInsert = `
insert into approvals (job_id, manifest_digest, verdict_id, actor, decision, note, at, expires_at, signature, signer_key)
values ($1, $2, $3, $4, $5, $6, coalesce($8, now()), coalesce($9, now() + make_interval(secs => $7)), nullif($10, ''), nullif($11, ''))
returning id, at, expires_at, approval_row_hash(id, job_id, manifest_digest, verdict_id, actor, decision, note, at, expires_at)`

// ApprovalsRecord stores a decision on a job, valid for validFor, with the audit entry the caller
// worded, in one transaction; it returns r with its ID and times. A signed decision keeps the
// times of its statement (r.At, r.ExpiresAt), which its signature covers; an unsigned one is
// dated by the database.
func (s *Store) ApprovalsRecord(ctx context.Context, r approval.Record, validForSeconds float64, audit AuditEntry) (approval.Record, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var rowHash string
		var at, expires *time.Time
		if r.Signature != "" {
			at, expires = &r.At, &r.ExpiresAt
		}
		if err := tx.QueryRow(ctx, approvalsInsert, r.JobID, r.ManifestDigest, r.VerdictID, r.Actor, string(r.Decision), r.Note,
			validForSeconds, at, expires, r.Signature, r.SignerKey).Scan(&r.ID, &r.At, &r.ExpiresAt, &rowHash); err != nil {
			return fmt.Errorf("record %s %s of job %s: %w", r.Actor, r.Decision, r.JobID, translate(err))
		}
		// The audit entry names the row and the hash of its fields: a row without such an entry
		// in the job's chain was written around replayctl (ApprovalsUnaudited).
		details := make(map[string]any, len(audit.Details)+2)
		for k, v := range audit.Details {
			details[k] = v
		}
		details["approvalId"], details["approvalHash"] = r.ID, rowHash
		audit.Details = details
		return AuditInsert(ctx, tx, audit)
	})
	return r, err
}

const approvalsForJob = `
select id, job_id, manifest_digest, verdict_id, actor, decision, note, at, expires_at,
       coalesce(signature, ''), coalesce(signer_key, '')
  from approvals where job_id = $1 order by id`

// ApprovalsForJob returns every decision on jobID, oldest first.
func (s *Store) ApprovalsForJob(ctx context.Context, jobID string) ([]approval.Record, error) {
	rows, err := s.pool.Query(ctx, approvalsForJob, jobID)
	if err != nil {
		return nil, fmt.Errorf("read the approvals of job %s: %w", jobID, translate(err))
	}
	recs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (approval.Record, error) {
		var a approval.Record
		var d string
		err := r.Scan(&a.ID, &a.JobID, &a.ManifestDigest, &a.VerdictID, &a.Actor, &d, &a.Note, &a.At, &a.ExpiresAt, &a.Signature, &a.SignerKey)
		a.Decision = approval.Decision(d)
		return a, err
	})
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("read the approvals of job %s: %w", jobID, translate(err))
	}
	return recs, nil
}

// approvalsUnaudited lists jobID's approval rows that no audit entry of the job names with the
// hash of the row as it is now: inserted or edited around replayctl.
const approvalsUnaudited = `
select a.id, a.actor, a.decision
  from approvals a
 where a.job_id = $1
   and not exists (select 1 from audit e
                    where e.job_id = $1 and e.details->>'approvalId' = a.id::text
                      and e.details->>'approvalHash' = approval_row_hash(a.id, a.job_id, a.manifest_digest, a.verdict_id,
                                                                         a.actor, a.decision, a.note, a.at, a.expires_at))
 order by a.id`

// ApprovalsUnaudited returns, as breaks of the audit chain, jobID's approval rows that no audit
// entry backs (inserted by hand) or whose fields changed since theirs was written.
func (s *Store) ApprovalsUnaudited(ctx context.Context, jobID string) ([]AuditBreak, error) {
	rows, err := s.pool.Query(ctx, approvalsUnaudited, jobID)
	if err != nil {
		return nil, fmt.Errorf("check the approvals of job %s against the audit log: %w", jobID, translate(err))
	}
	var out []AuditBreak
	var id int64
	var actor, decision string
	_, err = pgx.ForEachRow(rows, []any{&id, &actor, &decision}, func() error {
		out = append(out, AuditBreak{ID: id, JobID: jobID, Action: "approval #" + fmt.Sprint(id),
			Why: fmt.Sprintf("the %s decision by %s is not the one the audit log recorded: inserted or changed in the ledger by hand", decision, actor)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("check the approvals of job %s against the audit log: %w", jobID, translate(err))
	}
	return out, nil
}
