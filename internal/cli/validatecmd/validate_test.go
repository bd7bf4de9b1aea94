package validatecmd

import (
	"testing"

	"github.com/replayctl/replayctl/internal/cli/clitest"
)

func TestValidateFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *ValidateOptions
	err := clitest.Run(NewCmdValidate(clitest.Factory(t), func(o *ValidateOptions) error { got = o; return nil }), "job.json", "--ledger")
	if err != nil || got == nil || got.Path != "job.json" || !got.CheckLedger {
		t.Fatalf("validate --ledger: %v, options %+v", err, got)
	}
}
