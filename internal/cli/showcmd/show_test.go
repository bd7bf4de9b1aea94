package showcmd

import (
	"testing"

	"github.com/replayctl/replayctl/internal/cli/clitest"
)

func TestShowFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *ShowOptions
	err := clitest.Run(NewCmdShow(clitest.Factory(t), func(o *ShowOptions) error { got = o; return nil }), "job-1", "-o", "export.json", "--force")
	if err != nil || got == nil || got.Path != "job-1" || got.Output != "export.json" || !got.Force {
		t.Fatalf("show -o: %v, options %+v", err, got)
	}
}
