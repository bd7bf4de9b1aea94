package pacecmd

import (
	"testing"

	"github.com/replayctl/replayctl/internal/cli/clitest"
)

func TestPaceFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *PaceOptions
	err := clitest.Run(NewCmdPace(clitest.Factory(t), func(o *PaceOptions) error { got = o; return nil }),
		"job-1", "--rate", "50", "--reason", "the provider asked us to slow down")
	if err != nil || got == nil {
		t.Fatalf("pace: %v", err)
	}
	if got.Rate != 50 || got.Request.Reason != "the provider asked us to slow down" || got.Request.JobID != "job-1" {
		t.Fatalf("options %+v", got)
	}
}
