package demo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/natsembed"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/planner"
	"github.com/replayctl/replayctl/protocol"
	"github.com/replayctl/replayctl/shadow"
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
	// Step narrates each stage in one line; Progress follows the plan (planner.Options),
	// ShadowProgress the shadow pass (shadow.Options) and ExecuteProgress the execute runs
	// (executor.Options); Stage is told the steps of all three.
	Step            func(format string, args ...any)
	Progress        func(scanned, total int64)
	Stage           func(description string)
	ShadowProgress  func(done, total int64)
	ExecuteProgress func(executor.Progress)
}

// Timings are how long each phase of a run took.
type Timings struct {
	// Seed covers starting NATS, recreating the schema and seeding; Shadow includes starting the
	// responder; Execute is the real execute run alone (not the dry run or the refused second run).
	Seed, Plan, Shadow, Execute, Total time.Duration
}

// Report is what a demo run did and found.
type Report struct {
	Schema       string
	ManifestPath string
	Truth        Truth
	Plan         *planner.Result
	// Mismatches name every figure where the plan, the shadow or the execute differs from the
	// seeded truth; empty is a pass. PlanMismatches, ShadowMismatches and ExecuteMismatches
	// are the same, by phase.
	Mismatches                                          []string
	PlanMismatches, ShadowMismatches, ExecuteMismatches []string
	// Backfill is the backfill phase; BackfillMismatches its figures that differ from the truth.
	Backfill           *Backfill
	BackfillMismatches []string
	// API is the HTTP half: the billing API behind the idempotency middleware; APIMismatches
	// its answers or provider counts that differ from the expected ones.
	API           *API
	APIMismatches []string
	// TamperedRefusal is the error loading a hand-edited copy of the manifest gave.
	TamperedRefusal error
	// Shadow is the shadow pass of the planned job through the billing consumer's responder;
	// ShadowReportPath is where its report was written.
	Shadow           *shadow.Report
	ShadowReportPath string
	// ProviderCallsDuringShadow counts the calls the billing provider received while the shadow
	// pass ran: anything but 0 is a bug.
	ProviderCallsDuringShadow int64
	// Execution is the execute phase: dry run, run through the billing consumer, the payment
	// provider's counts, and the refused second run.
	Execution *Execution
	Timings   Timings
}

// Run seeds an in-process NATS server and the demo schema, plans the replay, shadows it through
// the example billing consumer, executes it through the same consumer for real, and proves every
// phase against the seeded truth.
func Run(ctx context.Context, opts Options) (*Report, error) {
	began := time.Now()
	if opts.Step == nil {
		opts.Step = func(string, ...any) {}
	}
	step := opts.Step
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

	store, release, err := ledger.OpenFreshSchema(ctx, opts.DatabaseURL, opts.Schema, func() {
		step("waiting for another demo run to finish with PostgreSQL schema %s (or pass --schema)", opts.Schema)
	})
	if err != nil {
		return nil, err
	}
	defer release()
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
	report.Timings.Seed = time.Since(began)
	mark := time.Now()
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
	report.Timings.Plan = time.Since(mark)
	step("planned job %s: %d targets, manifest %s", res.Manifest.ID, res.Manifest.Stats.Targets, report.ManifestPath)

	report.PlanMismatches = Compare(truth, res.Manifest)
	tampered, err := tamper(report.ManifestPath)
	if err != nil {
		return nil, err
	}
	_, report.TamperedRefusal = manifest.Load(tampered)

	mark = time.Now()
	if err := shadowJob(ctx, nc, js, store, opts, report); err != nil {
		return nil, err
	}
	report.Timings.Shadow = time.Since(mark)
	report.ShadowMismatches = CompareShadow(truth, report.Shadow, report.ProviderCallsDuringShadow)

	if err := executeJob(ctx, nc, js, store, opts, sc, report); err != nil {
		return nil, err
	}
	report.Timings.Execute = report.Execution.Duration
	report.ExecuteMismatches = CompareExecute(truth, report.Execution)
	if report.Backfill, err = backfillJob(ctx, nc, js, store, opts, sc); err != nil {
		return nil, err
	}
	report.BackfillMismatches = CompareBackfill(report.Backfill)
	if report.API, err = apiPhase(ctx, store, step); err != nil {
		return nil, err
	}
	report.APIMismatches = CompareAPI(report.API)
	report.Mismatches = slices.Concat(report.PlanMismatches, report.ShadowMismatches, report.ExecuteMismatches, report.BackfillMismatches, report.APIMismatches)
	report.Timings.Total = time.Since(began)
	return report, nil
}

// shadowJob serves the billing consumer's shadow responder, at effect version 2 with its fee fix,
// and shadows the planned job through it.
func shadowJob(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, store *ledger.Store, opts Options, report *Report) error {
	report.ShadowReportPath = filepath.Join(opts.Dir, "job.shadow.json")
	r, calls, err := shadowManifest(ctx, nc, js, store, opts, report.Plan.Manifest, report.ShadowReportPath)
	if err != nil {
		return err
	}
	report.Shadow, report.ProviderCallsDuringShadow = r, calls
	return nil
}

// shadowManifest shadows m through the billing consumer's responder and writes the report to
// reportPath; it returns the calls the billing provider received meanwhile (0 unless a bug).
func shadowManifest(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, store *ledger.Store, opts Options,
	m *manifest.Manifest, reportPath string) (*shadow.Report, int64, error) {
	provider := billing.NewProvider()
	c, err := consumer.New(consumer.Config{
		Name:       m.Consumer,
		Store:      store,
		Conn:       nc,
		Stream:     billingStream,
		DLQSubject: dlqSubject(m.Consumer),
		Handler:    billing.Handler(provider, time.Now),
	})
	if err != nil {
		return nil, 0, fmt.Errorf("demo: billing consumer: %w", err)
	}
	stop, err := c.ServeShadow(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("demo: serve the billing consumer's shadow responder: %w", err)
	}
	defer stop()
	opts.Step("started the billing consumer's shadow responder on %s", protocol.ShadowSubject(m.Consumer))
	r, err := shadow.Run(ctx, nc, js, store, shadow.Options{
		Manifest:   m,
		Thresholds: shadow.DefaultThresholds(),
		Actor:      opts.Actor,
		ReportPath: reportPath,
		Progress:   opts.ShadowProgress,
		Stage:      opts.Stage,
	})
	if err != nil {
		return nil, 0, err
	}
	if err := shadow.WriteReport(reportPath, r); err != nil {
		return nil, 0, err
	}
	return r, provider.Calls(""), nil
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

// CompareShadow lists every figure of the shadow report r that differs from the truth, and every
// external call the provider received during the pass.
func CompareShadow(truth Truth, r *shadow.Report, providerCalls int64) []string {
	var out []string
	check := func(field string, want, got any) {
		if !reflect.DeepEqual(want, got) {
			out = append(out, fmt.Sprintf("shadow %s: expected %v, got %v", field, want, got))
		}
	}
	t := r.Totals
	check("provider calls during the shadow pass", int64(0), providerCalls)
	check("verdict pass", true, r.Verdict.Pass)
	check("targets", truth.Targets, t.Targets)
	check("answered", truth.Targets, t.Answered)
	// A DLQ replay targets only events that never completed: none has an original to compare.
	check("changed", int64(0), t.Changed)
	check("identical", int64(0), t.Identical)
	check("noOriginal", truth.Targets, t.NoOriginal)
	check("shadowExternalCalls", billingEffects*truth.Targets, t.ShadowExternalCalls)
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
