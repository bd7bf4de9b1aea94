package jobscmd

import (
	"testing"

	"github.com/replayctl/replayctl/internal/cli/clitest"
)

func TestJobsFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *JobsOptions
	err := clitest.Run(NewCmdJobs(clitest.Factory(t), func(o *JobsOptions) error { got = o; return nil }),
		"--consumer", "billing", "--status", "paused", "--since", "36h", "--limit", "5")
	if err != nil || got == nil {
		t.Fatalf("jobs: %v", err)
	}
	if got.List.Consumer != "billing" || got.List.Status != "paused" || got.Since != "36h" || got.List.Limit != 5 {
		t.Fatalf("options %+v", got)
	}
}
