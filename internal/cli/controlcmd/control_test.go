package controlcmd

import (
	"testing"

	"github.com/replayctl/replayctl/internal/cli/clitest"
)

func TestControlFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	for _, action := range []string{"pause", "resume", "cancel"} {
		var got *ControlOptions
		err := clitest.Run(NewCmdControl(clitest.Factory(t), action, func(o *ControlOptions) error { got = o; return nil }),
			"job-1", "--reason", "provider incident INC-7")
		if err != nil || got == nil || got.Request.JobID != "job-1" || got.Request.Actor != "bob" || got.Request.Reason != "provider incident INC-7" {
			t.Fatalf("%s: %v, options %+v", action, err, got)
		}
	}
}
