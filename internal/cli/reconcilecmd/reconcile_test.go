package reconcilecmd

import (
	"testing"

	"github.com/replayctl/replayctl/internal/cli/clitest"
)

func TestReconcileFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *ReconcileOptions
	err := clitest.Run(NewCmdReconcile(clitest.Factory(t), func(o *ReconcileOptions) error { got = o; return nil }),
		"--consumer", "billing", "--job", "job-1", "--dry-run", "--max", "100")
	if err != nil || got == nil || got.Request.Consumer != "billing" || got.Request.JobID != "job-1" || !got.Request.DryRun || got.Request.Max != 100 {
		t.Fatalf("reconcile: %v, options %+v", err, got)
	}
	var res *ReconcileResolveOptions
	err = clitest.Run(NewCmdReconcileResolve(clitest.Factory(t), func(o *ReconcileResolveOptions) error { res = o; return nil }),
		"evt-1", "--consumer", "billing", "--as", "not-happened", "--note", "no charge at the provider", "--yes")
	if err != nil || res == nil || res.As != "not-happened" || res.Request.Consumer != "billing" || res.Request.Note != "no charge at the provider" || !res.Yes {
		t.Fatalf("reconcile resolve: %v, options %+v", err, res)
	}
}
