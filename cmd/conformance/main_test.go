package main

import (
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/conformance"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
)

// build compiles a command of this module into dir.
func build(t *testing.T, dir, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// The Go SDK's billing consumer keeps every rule; each deliberately broken consumer fails the
// rules it breaks, and only those where the rest of it is the SDK.
func TestTheKitPassesTheSDKConsumerAndCatchesEachBrokenOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sdk := build(t, dir, "github.com/replayctl/replayctl/examples/billing/cmd/billing-consumer")
	broken := build(t, dir, "github.com/replayctl/replayctl/conformance/brokenconsumer")
	for _, tc := range []struct {
		name, cmd string
		timeout   time.Duration
		// fail maps each rule that must fail to what its saw must say; every other rule must pass.
		// A nil map means every rule must fail.
		fail map[string]string
	}{
		{name: "sdk", cmd: sdk + " -retry-backoff 100ms", timeout: 30 * time.Second, fail: map[string]string{}},
		{name: "naive", cmd: broken + " -break naive", timeout: time.Second},
		{name: "double-charge", cmd: broken + " -break double-charge", timeout: 10 * time.Second, fail: map[string]string{
			"duplicate-delivery": "2 times, want 1", "changed-payload-conflict": "2 times, want 1",
			"live-lease-waits": "2 times, want 1", "bumped-version-runs-once": "2 times, want 1",
			"expired-not-happened-runs-once": "2 times, want 1", "lookup-answers": "Verdict:unknown",
			// Its extra charge comes before the SDK's mark, so the call in flight has none.
			"kill-mid-call-uncertain": "before its start was marked", "business-failure-recorded": "1 times, want 0"}},
		{name: "shadow-calls", cmd: broken + " -break shadow-calls", timeout: 10 * time.Second, fail: map[string]string{
			"shadow-no-call-no-row": "1 times, want 0"}},
		{name: "unmarked-call", cmd: broken + " -break unmarked-call", timeout: 10 * time.Second, fail: map[string]string{
			"kill-mid-call-uncertain": "before its start was marked"}},
		{name: "plaintext-results", cmd: broken + " -break plaintext-results", timeout: 10 * time.Second, fail: map[string]string{
			"sealed-result-body": "is stored as it is"}},
		{name: "no-reconcile-worker", cmd: broken + " -break no-reconcile-worker", timeout: 10 * time.Second, fail: map[string]string{
			"reconcile-worker": "did not settle the row"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			report, err := run(t.Context(), options{consumerCmd: tc.cmd, databaseURL: pgtest.URL(t), ready: "answering shadow requests",
				readyTimeout: time.Minute, timeout: tc.timeout}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if len(report.Results) != len(conformance.Rules()) {
				t.Fatalf("%d results, want one per rule (%d)", len(report.Results), len(conformance.Rules()))
			}
			for _, res := range report.Results {
				want, mustFail := tc.fail[res.Rule]
				if tc.fail == nil {
					mustFail = true
				}
				switch {
				case mustFail && res.Pass:
					t.Errorf("%s passed a consumer that breaks it", res.Rule)
				case mustFail && !strings.Contains(res.Saw, want):
					t.Errorf("%s failed for another reason than the breakage: saw %q, want %q", res.Rule, res.Saw, want)
				case !mustFail && !res.Pass:
					t.Errorf("%s failed a consumer that keeps it: %s", res.Rule, res.Saw)
				}
			}
		})
	}
}
