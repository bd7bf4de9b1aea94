package democmd

import (
	"testing"

	"github.com/replayctl/replayctl/internal/cli/clitest"
)

func TestDemoFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *DemoOptions
	err := clitest.Run(NewCmdDemo(clitest.Factory(t), func(o *DemoOptions) error { got = o; return nil }), "--events", "300", "--schema", "mydemo", "--dir", "/tmp/d")
	if err != nil || got == nil || got.Events != 300 || got.Schema != "mydemo" || got.Dir != "/tmp/d" || got.Actor != "bob" {
		t.Fatalf("demo: %v, options %+v", err, got)
	}
}
