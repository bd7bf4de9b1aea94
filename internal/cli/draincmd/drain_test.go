package draincmd

import (
	"testing"

	"github.com/replayctl/replayctl/internal/cli/clitest"
)

func TestDrainFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *DrainOptions
	err := clitest.Run(NewCmdDrain(clitest.Factory(t), func(o *DrainOptions) error { got = o; return nil }), "job-1", "--yes")
	if err != nil || got == nil || got.Request.JobID != "job-1" || !got.Yes || got.Request.Actor != "bob" {
		t.Fatalf("drain: %v, options %+v", err, got)
	}
}
