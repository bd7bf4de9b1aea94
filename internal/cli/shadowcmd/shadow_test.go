package shadowcmd

import (
	"testing"

	"github.com/replayctl/replayctl/internal/cli/clitest"
)

func TestShadowFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *ShadowOptions
	err := clitest.Run(NewCmdShadow(clitest.Factory(t), func(o *ShadowOptions) error { got = o; return nil }),
		"job.json", "--concurrency", "8", "--sample", "3", "--ignore-field", "feeCents", "--max-calls-over", "1", "--report-html", "r.html")
	if err != nil || got == nil {
		t.Fatalf("shadow: %v", err)
	}
	r := got.Request
	if got.ManifestPath != "job.json" || r.Concurrency != 8 || r.Sample != 3 || len(r.IgnoreFields) != 1 || r.IgnoreFields[0] != "feeCents" ||
		r.Thresholds.MaxCallsOverExpected != 1 || got.HTMLReportPath != "r.html" {
		t.Fatalf("options %+v", got)
	}
}
