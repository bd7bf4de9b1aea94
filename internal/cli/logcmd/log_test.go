package logcmd

import (
	"testing"

	"github.com/replayctl/replayctl/internal/cli/clitest"
)

func TestLogFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *LogOptions
	err := clitest.Run(NewCmdLog(clitest.Factory(t), func(o *LogOptions) error { got = o; return nil }), "job-1", "--verify")
	if err != nil || got == nil || got.JobID != "job-1" || !got.Verify {
		t.Fatalf("log --verify job-1: %v, options %+v", err, got)
	}
	got = nil
	if err := clitest.Run(NewCmdLog(clitest.Factory(t), func(o *LogOptions) error { got = o; return nil }), "--verify"); err != nil || got == nil || got.JobID != "" {
		t.Fatalf("log --verify of the whole log: %v, options %+v", err, got)
	}
}
