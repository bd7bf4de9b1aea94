package planner

import (
	"strings"
	"testing"

	"github.com/replayctl/replayctl/manifest"
)

// Events the loop guard keeps out never reach the candidates: the sentence counts them over the
// events it considered, never "10 of 0".
func TestNoTargetsCountsFailedReplaysOverTheEventsConsidered(t *testing.T) {
	t.Parallel()
	m := &manifest.Manifest{Source: manifest.Source{Stream: "DLQ"}}
	m.Stats.Scanned, m.Stats.FailedAfterReplay = 10, 10
	err := noTargets(m)
	if err == nil || !strings.Contains(err.Error(), "10 of 10 events failed again") {
		t.Fatalf("%v", err)
	}
}
