package health

import (
	"fmt"

	"github.com/replayctl/replayctl/ledger"
)

// ReplicationStat is the ledger's replication against what a failover needs to lose nothing the
// ledger acknowledged.
type ReplicationStat struct {
	ledger.Replication
	// Warn is true when a failover to a replica may lose acknowledged ledger rows.
	Warn bool `json:"warn"`
}

// JudgeReplication says whether r lets a failover lose acknowledged ledger rows, and what to set.
// A lost claim or completion is worse than a lost row anywhere else: the next delivery of its
// event runs the external call again.
func JudgeReplication(r ledger.Replication) (ReplicationStat, *Warning) {
	st := ReplicationStat{Replication: r}
	const risk = "a failover to a replica may lose the newest rows the ledger acknowledged (claims, marks, completions), " +
		"and the next delivery of such an event runs its external call again"
	switch {
	case r.Replicas > 0 && r.SynchronousStandbyNames == "":
		st.Warn = true
		return st, &Warning{Metric: "replication",
			Summary: fmt.Sprintf("the ledger's PostgreSQL streams to %d replica(s) asynchronously (synchronous_standby_names is empty): %s", r.Replicas, risk),
			Action:  "set synchronous_standby_names (e.g. 'ANY 1 (replica1, replica2)') and keep synchronous_commit on (or remote_apply) before relying on a failover (docs/operations.md, \"Failover\")"}
	case r.SynchronousStandbyNames != "" && (r.SynchronousCommit == "off" || r.SynchronousCommit == "local"):
		st.Warn = true
		return st, &Warning{Metric: "replication",
			Summary: fmt.Sprintf("synchronous_standby_names is %q but synchronous_commit is %s, so commits do not wait for the standby: %s", r.SynchronousStandbyNames, r.SynchronousCommit, risk),
			Action:  "set synchronous_commit = on (or remote_write, remote_apply) for the ledger's database or its roles (docs/operations.md, \"Failover\")"}
	}
	return st, nil
}
