package statuscmd

import (
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/cli/clitest"
)

func TestStatusFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *StatusOptions
	err := clitest.Run(NewCmdStatus(clitest.Factory(t), func(o *StatusOptions) error { got = o; return nil }), "job-1", "--watch", "--interval", "5s")
	if err != nil || got == nil || got.JobID != "job-1" || !got.Watch || got.Interval != 5*time.Second {
		t.Fatalf("status --watch: %v, options %+v", err, got)
	}
}
