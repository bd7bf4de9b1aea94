package executor

import "github.com/replayctl/replayctl/ledger"

// unsettled is how many targets may still need a publish: neither skipped nor settled.
func unsettled(ts map[string]int64) int64 {
	return ts[ledger.TargetPending] + ts[ledger.TargetShadowed] + ts[ledger.TargetPublished]
}
