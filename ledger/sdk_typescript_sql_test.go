package ledger

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The TypeScript SDK (sdk/typescript/src/ledger.ts) sends the Go SDK's ledger statements, so that
// instances of both on one durable keep the same compare-and-set rules. Its copies must stay the
// same text as the statements here: a change to one that is not made to the other fails this test.
func TestTheTypeScriptSDKSendsTheGoSDKsStatements(t *testing.T) {
	src, err := os.ReadFile("../sdk/typescript/src/ledger.ts")
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)const (\\w+) = `(.*?)`").FindAllStringSubmatch(string(src), -1) {
		consts[m[1]] = m[2]
	}
	expand := strings.NewReplacer("${leasedRow}", leasedRow, "${stateProcessing}", stateProcessing, "${batchedRow}", batchedRow,
		"${uncertainRowFrom}", uncertainRowFrom, "${uncertainPageOf}", uncertainPageOf)
	space := regexp.MustCompile(`\s+`)
	norm := func(s string) string { return strings.TrimSpace(space.ReplaceAllString(s, " ")) }
	for ts, goSQL := range map[string]string{
		"claimLock": effectsClaimLock, "claimUpsert": effectsClaim, "heartbeatSQL": effectsHeartbeat,
		"callStartedSQL": effectsCallStarted, "completeSQL": effectsComplete, "markUncertainSQL": effectsMarkUncertain,
		"markLapsedUncertainSQL": effectsMarkLapsedUncertain, "releaseSQL": effectsRelease,
		"isExecutingSQL": effectVersionsIsExecuting, "registerAlgorithmSQL": fingerprintAlgorithmsRegister,
		"applyExpiredVerdictSQL": effectsApplyExpiredVerdict, "reopenExpiredSQL": effectsReopenExpired,
		"deliveryCountsAddSQL": deliveryCountsAdd, "uncertainSummarySQL": effectsUncertainSummary,
		"batchedRow": batchedRow, "callStartedBatchSQL": effectsCallStartedBatch, "heartbeatBatchSQL": effectsHeartbeatBatch,
		"completeBatchSQL": effectsCompleteBatch, "claimLockBatchSQL": effectsClaimLockBatch, "claimBatchSQL": effectsClaimBatch,
		"uncertainPageSQL": effectsUncertainPage, "stuckPageSQL": effectsStuckPage, "reconcileApplySQL": effectsReconcileApply,
		"auditInsertSQL": auditInsert,
	} {
		got, ok := consts[ts]
		if !ok {
			t.Errorf("sdk/typescript/src/ledger.ts has no statement %s", ts)
			continue
		}
		if norm(expand.Replace(got)) != norm(goSQL) {
			t.Errorf("sdk/typescript/src/ledger.ts's %s differs from Go's:\n TS: %s\n Go: %s", ts, norm(expand.Replace(got)), norm(goSQL))
		}
	}
}
