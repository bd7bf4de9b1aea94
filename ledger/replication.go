package ledger

import (
	"context"
	"fmt"
)

// Replication is how the ledger's PostgreSQL replicates what it commits, as far as this
// connection can see it: whether a failover to a replica can lose rows the ledger acknowledged.
type Replication struct {
	// SynchronousStandbyNames and SynchronousCommit are the server's settings.
	SynchronousStandbyNames string `json:"synchronousStandbyNames"`
	SynchronousCommit       string `json:"synchronousCommit"`
	// Replicas counts the streaming replicas connected now (pg_stat_replication).
	Replicas int `json:"replicas"`
	// InRecovery is true on a standby: the ledger is then read-only.
	InRecovery bool `json:"inRecovery"`
}

const replicationRead = `
select current_setting('synchronous_standby_names'), current_setting('synchronous_commit'),
       (select count(*) from pg_stat_replication)::int, pg_is_in_recovery()`

// Replication reads the server's replication settings. A read, so it is sent again after a lost
// connection.
func (s *Store) Replication(ctx context.Context) (Replication, error) {
	var r Replication
	_, err := retryLostConnection(ctx, func() error {
		return s.pool.QueryRow(ctx, replicationRead).Scan(&r.SynchronousStandbyNames, &r.SynchronousCommit, &r.Replicas, &r.InRecovery)
	})
	if err != nil {
		return Replication{}, fmt.Errorf("read the ledger's replication settings: %w", translate(err))
	}
	return r, nil
}
