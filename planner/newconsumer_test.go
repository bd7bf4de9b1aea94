package planner_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/planner"
)

// A misspelt --consumer would plan every DLQ message as never processed: a consumer the ledger
// has never seen is refused, naming the known ones, unless the plan says it is a first replay.
func TestPlanRefusesAConsumerTheLedgerHasNeverSeen(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.dlq("dlq.billing", "e1", "timeout", `{"n":1}`)
	f.dlq("dlq.billing", "e2", "timeout", `{"n":2}`)
	f.effect("e2", "completed", `{"n":2}`, 1, nil)

	_, err := planner.Plan(f.ctx, f.js, f.store, f.options(func(o *planner.Options) { o.Consumer, o.NewConsumer = "biling", false }))
	if !errors.Is(err, ledger.ErrUnknownConsumer) {
		t.Fatalf("plan of consumer biling: %v, want ErrUnknownConsumer", err)
	}
	for _, want := range []string{`consumer "biling"`, "did you mean billing?", "known consumers: billing", "pass --new-consumer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, statErr := os.Stat(filepath.Join(f.dir, "job.json")); !os.IsNotExist(statErr) {
		t.Errorf("a refused plan wrote its manifest: %v", statErr)
	}

	res, err := planner.Plan(f.ctx, f.js, f.store, f.options(func(o *planner.Options) { o.NewConsumer = false }))
	if err != nil || res.Manifest.Stats.Targets != 1 {
		t.Fatalf("plan of the known consumer billing without NewConsumer: %v", err)
	}
	res, err = planner.Plan(f.ctx, f.js, f.store, f.options(func(o *planner.Options) {
		o.Consumer, o.NewConsumer, o.OutputPath = "shipping", true, filepath.Join(f.dir, "first.json")
	}))
	if err != nil || res.Manifest.Stats.Targets != 2 {
		t.Fatalf("first replay of shipping with NewConsumer: %v", err)
	}
}
