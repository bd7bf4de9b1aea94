package plancmd

import (
	"testing"

	"github.com/replayctl/replayctl/internal/cli/clitest"
	"github.com/replayctl/replayctl/internal/cli/shared"
)

func TestPlanFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *shared.PlanOptions
	err := clitest.Run(NewCmdPlan(clitest.Factory(t), func(o *shared.PlanOptions) error { got = o; return nil }),
		"--consumer", "billing", "--stream", "DLQ_BILLING", "--reason", "provider fixed", "-o", "job.json", "--since", "36h",
		"--sign-key", "/keys/id", "--ticket", "INC-7")
	if err != nil || got == nil {
		t.Fatalf("plan: %v", err)
	}
	r := got.Request
	if r.Consumer != "billing" || r.Stream != "DLQ_BILLING" || r.Reason != "provider fixed" || r.OutputPath != "job.json" || got.Since != "36h" ||
		got.SignKey != "/keys/id" || r.Ticket != "INC-7" || r.Actor != "bob" {
		t.Fatalf("options %+v", got)
	}
}
