package demo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/internal/natsembed"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/planner"
)

// DefaultSchema is the PostgreSQL schema the demo recreates on every run, so it never touches a real
// ledger in the same database.
const DefaultSchema = "replayctl_demo"

// Options configures a demo run.
type Options struct {
	DatabaseURL string
	Schema      string
	Events      int
	// Dir receives the manifest; empty means a new temporary directory.
	Dir   string
	Actor string
	Now   time.Time
	// Step narrates each stage in one line; Progress and Stage follow the plan (planner.Options).
	Step     func(format string, args ...any)
	Progress func(scanned, total int64)
	Stage    func(description string)
}

// Report is what a demo run did and found.
type Report struct {
	Schema       string
	ManifestPath string
	Truth        Truth
	Plan         *planner.Result
	// Mismatches name every figure where the plan differs from the seeded truth; empty is a pass.
	Mismatches []string
	// TamperedRefusal is the error loading a hand-edited copy of the manifest gave.
	TamperedRefusal error
}

// Run seeds an in-process NATS server and the demo schema, then plans the replay and proves it.
func Run(ctx context.Context, opts Options) (*Report, error) {
	step := opts.Step
	if step == nil {
		step = func(string, ...any) {}
	}
	if opts.Schema == "" {
		opts.Schema = DefaultSchema
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	sc := DefaultScenario(opts.Now)
	if opts.Events > 0 {
		sc.Events = opts.Events
	}
	if opts.Dir == "" {
		dir, err := os.MkdirTemp("", "replayctl-demo-")
		if err != nil {
			return nil, fmt.Errorf("demo: temporary directory: %w", err)
		}
		opts.Dir = dir
	} else if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("demo: create --dir: %w", err)
	}

	storeDir, err := os.MkdirTemp("", "replayctl-demo-nats-")
	if err != nil {
		return nil, fmt.Errorf("demo: temporary directory: %w", err)
	}
	defer os.RemoveAll(storeDir)
	srv, err := natsembed.Start(storeDir, false)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	nc, err := srv.Connect()
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("demo: JetStream: %w", err)
	}
	step("started an in-process NATS server with JetStream (store %s)", storeDir)

	store, err := ledger.OpenFreshSchema(ctx, opts.DatabaseURL, opts.Schema)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	mig, err := store.Migrate(ctx)
	if err != nil {
		return nil, err
	}
	step("recreated PostgreSQL schema %s and migrated the ledger to version %d", opts.Schema, mig.Version)

	truth, err := Seed(ctx, js, store, sc)
	if err != nil {
		return nil, err
	}
	step("seeded DLQ stream %s with %d messages and the %s ledger with %d completed effects",
		sc.Stream, truth.Scanned, sc.Consumer, sc.History)

	report := &Report{Schema: opts.Schema, ManifestPath: filepath.Join(opts.Dir, "job.json"), Truth: truth}
	res, err := planner.Plan(ctx, js, store, planner.Options{
		Consumer:   sc.Consumer,
		Stream:     sc.Stream,
		Reason:     "payments provider outage INC-4521 fixed; re-run the charges that timed out",
		Ticket:     "INC-4521",
		OutputPath: report.ManifestPath,
		Actor:      opts.Actor,
		Now:        opts.Now,
		Progress:   opts.Progress,
		Stage:      opts.Stage,
	})
	if err != nil {
		return nil, err
	}
	report.Plan = res
	step("planned job %s: %d targets, manifest %s", res.Manifest.ID, res.Manifest.Stats.Targets, report.ManifestPath)

	report.Mismatches = Compare(truth, res.Manifest)
	tampered, err := tamper(report.ManifestPath)
	if err != nil {
		return nil, err
	}
	_, report.TamperedRefusal = manifest.Load(tampered)
	return report, nil
}

// Compare lists every figure of m that differs from the truth.
func Compare(truth Truth, m *manifest.Manifest) []string {
	var out []string
	check := func(field string, want, got any) {
		if !reflect.DeepEqual(want, got) {
			out = append(out, fmt.Sprintf("%s: seeded %v, planned %v", field, want, got))
		}
	}
	s := m.Stats
	check("scanned", truth.Scanned, s.Scanned)
	check("missingEventId", truth.MissingEventID, s.MissingEventID)
	check("invalidEventId", truth.InvalidEventID, s.InvalidEventID)
	check("candidates", truth.Candidates, s.Candidates)
	check("repeatedInSource", truth.RepeatedInSource, s.RepeatedInSource)
	check("duplicateInSource", truth.DuplicateInSource, s.DuplicateInSource)
	check("ledgerPayloadMismatch", truth.LedgerPayloadMismatch, s.LedgerPayloadMismatch)
	check("alreadyCompleted", truth.AlreadyCompleted, s.AlreadyCompleted)
	check("completedUnderOlderVersion", truth.CompletedUnderOlderVersion, s.CompletedUnderOlderVersion)
	check("excludedUncertain", truth.ExcludedUncertain, s.ExcludedUncertain)
	check("excludedInFlight", truth.ExcludedInFlight, s.ExcludedInFlight)
	check("targets", truth.Targets, s.Targets)
	check("failureReasons", truth.FailureReasons, s.FailureReasons)
	check("expectedExternalCalls", truth.ExpectedExternalCalls, m.ExpectedExternalCalls)
	check("effectVersion.from", truth.EffectVersionFrom, m.EffectVersion.From)
	check("excluded.uncertain", truth.UncertainIDs, exclusionIDs(m.Excluded.Uncertain))
	check("excluded.inFlight", truth.InFlightIDs, exclusionIDs(m.Excluded.InFlight))
	check("excluded.conflicts", append(append([]string{}, truth.ConflictSourceIDs...), truth.ConflictLedgerIDs...), conflictIDs(m.Excluded.Conflicts))
	return out
}

func exclusionIDs(xs []manifest.LedgerExclusion) []string {
	out := []string{}
	for _, x := range xs {
		out = append(out, x.EventID)
	}
	return out
}

func conflictIDs(cs []manifest.Conflict) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.EventID)
	}
	return out
}

// tamper writes a copy of the manifest with writeForbidden switched on, as a well-meant hand edit would.
func tamper(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("demo: read manifest: %w", err)
	}
	edited := bytes.Replace(b, []byte(`"writeForbidden": false`), []byte(`"writeForbidden": true`), 1)
	if bytes.Equal(edited, b) {
		return "", fmt.Errorf("demo: writeForbidden not found in %s to tamper with", path)
	}
	out := filepath.Join(filepath.Dir(path), "job.tampered.json")
	if err := os.WriteFile(out, edited, 0o644); err != nil {
		return "", fmt.Errorf("demo: write tampered copy: %w", err)
	}
	return out, nil
}
