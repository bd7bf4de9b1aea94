package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/protocol"
)

// TestARunLongerThanTheDedupWindowIsWarnedAtPlanAndExecute: the billing stream drops a second
// copy of a replay only within its duplicate window, cut here to 2 s. Twenty targets fit in it
// only at 10 targets/s or more: plan says so, and execute says so again at --rate 5 (4 s), naming
// what the ledger guarantees regardless, and not at --rate 20 (1 s).
func TestARunLongerThanTheDedupWindowIsWarnedAtPlanAndExecute(t *testing.T) {
	// Waits on timeouts and restarts in a world of its own: runs beside the others.
	t.Parallel()
	const n = 20
	w := newExecWorld(t)
	w.updateBillingStream(t, func(cfg *jetstream.StreamConfig) { cfg.Duplicates = 2 * time.Second })
	w.Seed(n)
	stdout, stderr, code := w.replayctl(t, "plan --json --consumer billing --stream DLQ_BILLING --reason '"+planReason+"' -o "+w.ManifestPath())
	if code != cmdutil.ExitOK {
		t.Fatalf("plan: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	var planned struct {
		DedupWindow *protocol.DedupWindow `json:"dedupWindow"`
		Warnings    []string              `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(stdout), &planned); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, stdout)
	}
	want := protocol.DedupWindow{Stream: "BILLING", WindowSeconds: 2, Targets: n, FittingRate: 10, Exceeded: true}
	if planned.DedupWindow == nil || *planned.DedupWindow != want {
		t.Errorf("plan --json dedupWindow %+v, want %+v", planned.DedupWindow, want)
	}
	if w := dedupWarning(planned.Warnings); lacking(w, "stream BILLING drops a second copy", "duplicate window of 2s",
		"at any --rate below 10 targets/s", "no effect happens twice", "run at --rate 10 or more", "nats stream edit BILLING --dupe-window") != "" {
		t.Errorf("plan's warnings lack the duplicate window's: %q", planned.Warnings)
	}

	m, err := manifest.Load(w.ManifestPath())
	if err != nil {
		t.Fatal(err)
	}
	w.Shadow(m)
	w.RunConsumer(w.NewConsumer(nil, nil))

	stdout, stderr, code = w.replayctl(t, "execute --dry-run --json --rate 5 "+w.ManifestPath())
	if code != cmdutil.ExitOK {
		t.Fatalf("execute --dry-run: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	var dry struct {
		Preflight struct {
			DedupWindow *protocol.DedupWindow `json:"dedupWindow"`
			Warnings    []string              `json:"warnings"`
		} `json:"preflight"`
	}
	if err := json.Unmarshal([]byte(stdout), &dry); err != nil {
		t.Fatalf("execute --json: %v\n%s", err, stdout)
	}
	want = protocol.DedupWindow{Stream: "BILLING", WindowSeconds: 2, Targets: n, Rate: 5, ExpectedSeconds: 4, FittingRate: 10, Exceeded: true}
	if d := dry.Preflight.DedupWindow; d == nil || *d != want {
		t.Errorf("execute --json preflight.dedupWindow %+v, want %+v", d, want)
	}
	if w := dedupWarning(dry.Preflight.Warnings); lacking(w, "at --rate 5, publishing the 20 targets takes about 4s", "no effect happens twice") != "" {
		t.Errorf("execute --json preflight.warnings lack the duplicate window's: %q", dry.Preflight.Warnings)
	}

	_, stderr, code = w.replayctl(t, "execute --dry-run --rate 20 "+w.ManifestPath())
	if code != cmdutil.ExitOK || strings.Contains(stderr, "duplicate window") {
		t.Errorf("execute --rate 20 fits the window: exit %d, want 0 and no warning:\n%s", code, stderr)
	}

	stdout, stderr, code = w.replayctl(t, "execute --yes --rate 5 "+w.ManifestPath())
	if code != cmdutil.ExitOK {
		t.Fatalf("execute: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "warning: stream BILLING drops a second copy of a replay") {
		t.Errorf("execute at --rate 5 does not warn on stderr:\n%s", stderr)
	}
	w.assertChargedOnce(t, n)
}

// dedupWarning is the one of warnings about the duplicate window, "" when there is none.
func dedupWarning(warnings []string) string {
	for _, w := range warnings {
		if strings.Contains(w, "duplicate window") {
			return w
		}
	}
	return ""
}
