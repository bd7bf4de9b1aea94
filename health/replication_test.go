package health_test

import (
	"strings"
	"testing"

	"github.com/replayctl/replayctl/health"
	"github.com/replayctl/replayctl/ledger"
)

// A failover can lose acknowledged ledger rows when a replica streams asynchronously, or when the
// standby is named but commits do not wait for it; each case says what to set.
func TestReplicationWarnsWhenAFailoverMayLoseAcknowledgedRows(t *testing.T) {
	for _, c := range []struct {
		rep  ledger.Replication
		want string
	}{
		{ledger.Replication{SynchronousCommit: "on"}, ""},
		{ledger.Replication{SynchronousCommit: "on", Replicas: 1}, "asynchronously"},
		{ledger.Replication{SynchronousStandbyNames: "ANY 1 (r1)", SynchronousCommit: "local", Replicas: 1}, "do not wait for the standby"},
		{ledger.Replication{SynchronousStandbyNames: "ANY 1 (r1)", SynchronousCommit: "on", Replicas: 1}, ""},
		{ledger.Replication{SynchronousStandbyNames: "ANY 1 (r1)", SynchronousCommit: "remote_apply", Replicas: 1}, ""},
	} {
		st, w := health.JudgeReplication(c.rep)
		switch {
		case c.want == "" && (w != nil || st.Warn):
			t.Errorf("%+v: warned %v", c.rep, w)
		case c.want != "" && (w == nil || !st.Warn || !strings.Contains(w.Summary, c.want) || !strings.Contains(w.Action, "synchronous_")):
			t.Errorf("%+v: warning %+v, want one saying %q and what to set", c.rep, w, c.want)
		}
	}
}
