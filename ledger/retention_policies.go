package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/apikey"
)

const retentionPoliciesRegister = `
insert into retention_policies (kind, name, delays, replay_window_seconds, evidence_window_seconds,
                                irreversible, expired_is_new, registered_by, tombstone_window_seconds)
select k, n, d, r, e, i, x, b, nullif(t, 0)
  from unnest($1::text[], $2::text[], $3::jsonb[], $4::bigint[], $5::bigint[], $6::boolean[], $7::boolean[], $8::text[], $9::bigint[])
       as u(k, n, d, r, e, i, x, b, t)
on conflict (kind, name) do update
   set delays = excluded.delays, replay_window_seconds = excluded.replay_window_seconds,
       evidence_window_seconds = excluded.evidence_window_seconds, irreversible = excluded.irreversible,
       expired_is_new = excluded.expired_is_new, tombstone_window_seconds = excluded.tombstone_window_seconds,
       registered_by = excluded.registered_by, registered_at = now()
 where (retention_policies.delays, retention_policies.replay_window_seconds, retention_policies.evidence_window_seconds,
        retention_policies.irreversible, retention_policies.expired_is_new, retention_policies.tombstone_window_seconds)
       is distinct from
       (excluded.delays, excluded.replay_window_seconds, excluded.evidence_window_seconds,
        excluded.irreversible, excluded.expired_is_new, excluded.tombstone_window_seconds)`

// RetentionPoliciesRegister records the policies a service or consumer starts with, in one
// statement; a policy that did not change keeps the date it was first registered.
func (s *Store) RetentionPoliciesRegister(ctx context.Context, policies []apikey.Policy) error {
	n := len(policies)
	kinds, names, delays := make([]string, n), make([]string, n), make([][]byte, n)
	replay, evidence := make([]int64, n), make([]int64, n)
	irreversible, expiredIsNew, by := make([]bool, n), make([]bool, n), make([]string, n)
	tombstone := make([]int64, n)
	for i, p := range policies {
		d, err := json.Marshal(storedDelaysOf(p.Delays))
		if err != nil {
			return err
		}
		kinds[i], names[i], delays[i] = string(p.Kind), p.Name, d
		replay[i], evidence[i] = int64(p.ReplayWindow/time.Second), int64(p.EvidenceWindow/time.Second)
		irreversible[i], expiredIsNew[i], by[i] = p.Irreversible, p.ExpiredIsNew, p.RegisteredBy
		tombstone[i] = int64(p.TombstoneWindow / time.Second)
	}
	if _, err := s.pool.Exec(ctx, retentionPoliciesRegister, kinds, names, delays, replay, evidence, irreversible, expiredIsNew, by, tombstone); err != nil {
		return fmt.Errorf("register the retention policies: %w", err)
	}
	return nil
}

const retentionPoliciesList = `
select kind, name, delays, replay_window_seconds, evidence_window_seconds, irreversible, expired_is_new,
       registered_by, registered_at, coalesce(tombstone_window_seconds, 0)
  from retention_policies
 where ($1 = '' or kind = $1) and ($2 = '' or name = $2)
 order by kind, name`

// RetentionPoliciesList returns the registered policies of kind and name (empty: any), by kind
// and name.
func (s *Store) RetentionPoliciesList(ctx context.Context, kind apikey.PolicyKind, name string) ([]apikey.Policy, error) {
	rows, err := s.pool.Query(ctx, retentionPoliciesList, string(kind), name)
	if err != nil {
		return nil, fmt.Errorf("read the retention policies: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (apikey.Policy, error) {
		var p apikey.Policy
		var kind string
		var delays []byte
		var replay, evidence, tombstone int64
		if err := row.Scan(&kind, &p.Name, &delays, &replay, &evidence, &p.Irreversible, &p.ExpiredIsNew,
			&p.RegisteredBy, &p.RegisteredAt, &tombstone); err != nil {
			return p, err
		}
		p.Kind = apikey.PolicyKind(kind)
		p.ReplayWindow, p.EvidenceWindow = time.Duration(replay)*time.Second, time.Duration(evidence)*time.Second
		p.TombstoneWindow = time.Duration(tombstone) * time.Second
		var d storedDelays
		err := json.Unmarshal(delays, &d)
		p.Delays = d.delays()
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the retention policies: %w", err)
	}
	return out, nil
}

// storedDelays is the delays column: whole seconds, readable in psql.
type storedDelays struct {
	ClientRetry   int64 `json:"clientRetrySeconds"`
	OfflineResend int64 `json:"offlineResendSeconds"`
	Inquiry       int64 `json:"inquirySeconds"`
}

func storedDelaysOf(d apikey.Delays) storedDelays {
	return storedDelays{int64(d.ClientRetry / time.Second), int64(d.OfflineResend / time.Second), int64(d.Inquiry / time.Second)}
}

func (d storedDelays) delays() apikey.Delays {
	return apikey.Delays{ClientRetry: time.Duration(d.ClientRetry) * time.Second,
		OfflineResend: time.Duration(d.OfflineResend) * time.Second, Inquiry: time.Duration(d.Inquiry) * time.Second}
}
