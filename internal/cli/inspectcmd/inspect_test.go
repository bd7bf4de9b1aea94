package inspectcmd

import (
	"testing"

	"github.com/replayctl/replayctl/internal/cli/clitest"
	"github.com/replayctl/replayctl/internal/cli/shared"
)

// inspect takes plan's scope flags (shared.BindScope) and nothing that records a job.
func TestInspectFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *shared.PlanOptions
	err := clitest.Run(NewCmdInspect(clitest.Factory(t), func(o *shared.PlanOptions) error { got = o; return nil }),
		"--consumer", "billing", "--stream", "DLQ_BILLING", "--since", "36h")
	if err != nil || got == nil || got.Request.Consumer != "billing" || got.Request.Stream != "DLQ_BILLING" || got.Since != "36h" {
		t.Fatalf("inspect: %v, options %+v", err, got)
	}
	if err := clitest.Run(NewCmdInspect(clitest.Factory(t), func(*shared.PlanOptions) error { return nil }),
		"--consumer", "billing", "--stream", "DLQ_BILLING", "-o", "job.json"); err == nil {
		t.Fatal("inspect took -o, which would suggest it writes a manifest")
	}
}
