package executecmd

import (
	"testing"

	"github.com/replayctl/replayctl/internal/cli/clitest"
)

func TestExecuteFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *ExecuteOptions
	err := clitest.Run(NewCmdExecute(clitest.Factory(t), func(o *ExecuteOptions) error { got = o; return nil }),
		"job.json", "--yes", "--rate", "200", "--canary", "20", "--max-calls-over", "0.5", "--drain", "--dry-run")
	if err != nil || got == nil {
		t.Fatalf("execute: %v", err)
	}
	r := got.Request
	if got.ManifestPath != "job.json" || !got.Yes || !got.Drain || r.Rate != 200 || r.Canary != 20 || r.Guards.MaxCallsOver != 0.5 || !r.DryRun {
		t.Fatalf("options %+v", got)
	}
}
