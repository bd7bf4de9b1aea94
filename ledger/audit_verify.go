package ledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// AuditBreak is an audit entry whose chain does not hold: its hash is not the hash of its fields
// (edited), its link is not its predecessor's hash (an entry before it deleted, or it inserted
// by hand), or it has no chain at all (inserted around audit_append).
type AuditBreak struct {
	ID     int64  `json:"entryId"`
	Chain  string `json:"chain"`
	JobID  string `json:"jobId,omitempty"`
	Action string `json:"action"`
	Why    string `json:"why"`
}

// auditVerify checks the entries $1 names (a job's, or every entry when $1 is empty) against
// their chains: each entry's own hash, and its link to the entry before it in its chain. Each
// entry is read with its predecessor by the (chain, id) index: the cost follows the entries
// checked, not the log's length.
const auditVerify = `
select a.id, coalesce(a.chain, ''), coalesce(a.job_id, ''), a.action,
       case when a.chain is null or a.entry_hash is null
                 then 'the entry has no hash chain: it was written around replayctl'
            when a.entry_hash is distinct from audit_entry_hash(a.prev_hash, a.at, a.actor, a.job_id, a.manifest_digest,
                                                                a.action, a.details, a.chain, a.db_role)
                 then 'the entry does not match its hash: a field was changed after it was written'
            when a.prev_hash is distinct from p.entry_hash
                 then case when p.id is null then 'the entry links to an entry that is not there: one before it was deleted'
                           else 'the entry does not link to the one before it (#' || p.id || '): an entry between them was deleted, or this one inserted by hand' end
       end as why
  from audit a
  left join lateral (select b.id, b.entry_hash from audit b
                      where b.chain = a.chain and b.id < a.id
                      order by b.id desc limit 1) p on true
 where ($1 = '' or a.job_id = $1)
 order by a.id`

// AuditVerify returns the entries of jobID (every entry when jobID is empty) whose chain does not
// hold, oldest first, and how many entries it checked; for a job, also its approval rows that no
// entry of the chain backs as they are (ApprovalsUnaudited).
func (s *Store) AuditVerify(ctx context.Context, jobID string) (checked int64, breaks []AuditBreak, err error) {
	rows, err := s.pool.Query(ctx, auditVerify, jobID)
	if err != nil {
		return 0, nil, fmt.Errorf("verify the audit chain: %w", err)
	}
	var b AuditBreak
	var why *string
	_, err = pgx.ForEachRow(rows, []any{&b.ID, &b.Chain, &b.JobID, &b.Action, &why}, func() error {
		checked++
		if why != nil {
			b.Why = *why
			breaks = append(breaks, b)
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("verify the audit chain: %w", err)
	}
	if jobID != "" {
		// The job's approvals are what execute counts: each must be the one its entry recorded.
		unaudited, err := s.ApprovalsUnaudited(ctx, jobID)
		if err != nil {
			return 0, nil, err
		}
		breaks = append(breaks, unaudited...)
	}
	return checked, breaks, nil
}

// auditSigned lists the entries of $1 (every entry when empty) that carry a signature, with the
// statement it was made over.
const auditSigned = `
select id, coalesce(chain, ''), coalesce(job_id, ''), action, details->>'signature', coalesce(details->>'statement', ''),
       coalesce(details->>'signerKey', '')
  from audit
 where details ? 'signature' and ($1 = '' or job_id = $1)
 order by id`

// SignedAuditEntry is an audit entry that carries an SSH signature and its statement.
type SignedAuditEntry struct {
	ID                              int64
	Chain, JobID, Action            string
	Signature, Statement, SignerKey string
}

// AuditSigned returns the entries of jobID (every entry when empty) that carry a signature.
func (s *Store) AuditSigned(ctx context.Context, jobID string) ([]SignedAuditEntry, error) {
	rows, err := s.pool.Query(ctx, auditSigned, jobID)
	if err != nil {
		return nil, fmt.Errorf("read the signed audit entries: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[SignedAuditEntry])
	if err != nil {
		return nil, fmt.Errorf("read the signed audit entries: %w", translate(err))
	}
	return out, nil
}
