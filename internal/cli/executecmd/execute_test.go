package executecmd

import (
	"testing"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/cli/clitest"
)

func TestExecuteFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *ExecuteOptions
	err := clitest.Run(NewCmdExecute(clitest.Factory(t), func(o *ExecuteOptions) error { got = o; return nil }),
		"job.json", "--yes", "--rate", "200", "--canary", "20", "--max-calls-over", "0.5", "--max-retrying-ratio", "0.6", "--drain", "--dry-run")
	if err != nil || got == nil {
		t.Fatalf("execute: %v", err)
	}
	r := got.Request
	if got.ManifestPath != "job.json" || !got.Yes || !got.Drain || r.Rate != 200 || r.Canary != 20 || r.Guards.MaxCallsOver != 0.5 || r.Guards.MaxRetryingRatio != 0.6 || !r.DryRun {
		t.Fatalf("options %+v", got)
	}
}

func TestExecuteDefaultsToTheExecutorsGuards(t *testing.T) {
	var got *ExecuteOptions
	if err := clitest.Run(NewCmdExecute(clitest.Factory(t), func(o *ExecuteOptions) error { got = o; return nil }), "job.json"); err != nil || got == nil {
		t.Fatalf("execute: %v", err)
	}
	if want := executor.DefaultGuards(); got.Request.Guards != want {
		t.Fatalf("guards %+v, want the executor's defaults %+v", got.Request.Guards, want)
	}
}
