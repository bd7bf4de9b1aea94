package demo_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/demo"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/shadow"
)

// TestDemoMatchesTheSeededTruth runs the demo end to end in the test's own schema: the plan, the
// shadow and the execute must agree with the seed on every figure, the tampered copy must be
// refused as tampered, the shadow pass must not have reached the payment provider, the execute
// must have charged every target exactly once and nothing else, and a second execute must be
// refused by the job-status gate.
func TestDemoMatchesTheSeededTruth(t *testing.T) {
	dbURL := pgtest.URL(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var steps []string
	report, err := demo.Run(ctx, demo.Options{
		DatabaseURL: dbURL, Schema: schema, Events: 1000, Dir: t.TempDir(), Actor: "ci",
		Step: func(format string, _ ...any) { steps = append(steps, format) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Mismatches) > 0 {
		t.Fatalf("the demo differs from the seeded truth:\n%v", report.Mismatches)
	}
	// By construction: 1000 events, 14 excluded (2 source conflicts, 2 ledger conflicts, 7 uncertain,
	// 3 in flight), and 90 of the ordinary events from index 100 completed before (i%10 == 3): a
	// DLQ replay keeps those out too (issue 14).
	if report.Truth.Targets != 896 || report.Truth.AlreadyCompleted != 90 || report.Truth.CompletedUnderOlderVersion != 0 || report.Truth.Scanned != 1007 {
		t.Fatalf("seed truth drifted: %+v", report.Truth)
	}
	if !errors.Is(report.TamperedRefusal, manifest.ErrTampered) {
		t.Fatalf("tampered copy: %v, want ErrTampered", report.TamperedRefusal)
	}
	if len(steps) != 13 {
		t.Errorf("narrated %d steps, want 13: %v", len(steps), steps)
	}
	if a := report.API; a == nil || len(a.Steps) != 8 || a.Steps[len(a.Steps)-1].ProviderCalls != 3 {
		t.Errorf("API phase: %+v, want 8 steps ending with 3 provider charges", a)
	}
	if report.ProviderCallsDuringShadow != 0 || report.Shadow.Totals.ShadowExternalCalls != 2*report.Truth.Targets {
		t.Errorf("shadow: provider received %d calls, shadow recorded %d (want 0 and %d)",
			report.ProviderCallsDuringShadow, report.Shadow.Totals.ShadowExternalCalls, 2*report.Truth.Targets)
	}
	if tot := report.Shadow.Totals; tot.Changed != 0 || tot.NoOriginal != report.Truth.Targets {
		t.Errorf("shadow changed %d, no original %d: a DLQ replay's targets never completed, want 0 and %d", tot.Changed, tot.NoOriginal, report.Truth.Targets)
	}
	x := report.Execution
	targets := report.Truth.Targets
	if x.DryRun.Preflight.ToPublish != targets || x.DryRun.Published != 0 || x.StreamAfterDryRun != 0 {
		t.Errorf("dry run: would publish %d, published %d, %d messages on the stream (want %d, 0, 0)",
			x.DryRun.Preflight.ToPublish, x.DryRun.Published, x.StreamAfterDryRun, targets)
	}
	if f := x.Result.Final; x.Err != nil || x.Result.JobStatus != "completed" || f.Completed != targets || f.Failed != 0 || f.Uncertain != 0 {
		t.Errorf("execute: %v, job %s, final %+v (want completed, %d completed)", x.Err, x.Result.JobStatus, f, targets)
	}
	if x.ChargedOnce != targets || x.Duplicates != 0 || x.NotCharged != 0 || len(x.ExcludedCharged) != 0 || x.Strays != 0 {
		t.Errorf("provider charges: %d once, %d duplicates %v, %d never, excluded charged %v, %d strays (want %d once, none else)",
			x.ChargedOnce, x.Duplicates, x.DuplicateExamples, x.NotCharged, x.ExcludedCharged, x.Strays, targets)
	}
	if x.ProviderCalls != 2*targets {
		t.Errorf("provider calls %d, want 2 x %d targets", x.ProviderCalls, targets)
	}
	if g, ok := errors.AsType[*executor.GateError](x.SecondRefusal); !ok || g.Gate != executor.GateStatus {
		t.Errorf("second execute: %v, want a %s gate refusal", x.SecondRefusal, executor.GateStatus)
	}
	if x.StreamAfterSecond != x.StreamAfterRun || x.ProviderCallsAfterSecond != x.ProviderCalls {
		t.Errorf("the refused second execute published: stream %d -> %d messages, provider %d -> %d calls",
			x.StreamAfterRun, x.StreamAfterSecond, x.ProviderCalls, x.ProviderCallsAfterSecond)
	}
	store, err := ledger.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	job, err := store.JobsGet(ctx, report.Plan.Manifest.ID)
	if err != nil || job.ManifestDigest != report.Plan.Manifest.Digest || job.Status != "completed" {
		t.Fatalf("job %+v, %v", job, err)
	}
}

func TestCompareShadowNamesProviderCallsAndAnOriginalFound(t *testing.T) {
	truth := demo.Truth{Targets: 2}
	r := &shadow.Report{Totals: shadow.Totals{Targets: 2, Answered: 2, Changed: 1, NoOriginal: 1, ShadowExternalCalls: 4}, Verdict: shadow.Verdict{Pass: true}}
	got := strings.Join(demo.CompareShadow(truth, r, 3), "\n")
	for _, want := range []string{"provider calls during the shadow pass: expected 0, got 3", "shadow changed: expected 0, got 1", "shadow noOriginal: expected 2, got 1"} {
		if !strings.Contains(got, want) {
			t.Errorf("CompareShadow lacks %q:\n%s", want, got)
		}
	}
}

func TestCompareNamesEveryDifferingFigure(t *testing.T) {
	truth := demo.Truth{Targets: 3, FailureReasons: map[string]int64{"timeout": 3}}
	m := &manifest.Manifest{Stats: manifest.Stats{Targets: 2, FailureReasons: map[string]int64{"timeout": 2}}}
	got := demo.Compare(truth, m)
	want := map[string]bool{"targets: seeded 3, planned 2": true, "failureReasons: seeded map[timeout:3], planned map[timeout:2]": true}
	for _, g := range got {
		if want[g] {
			delete(want, g)
		}
	}
	if len(want) > 0 {
		t.Fatalf("Compare missed %v in %v", want, got)
	}
}

func TestCompareExecuteNamesDuplicatesAndAnUnrefusedSecondRun(t *testing.T) {
	truth := demo.Truth{Targets: 2}
	final := executor.Progress{Targets: 2, Completed: 2, ExternalCalls: 4}
	x := &demo.Execution{
		DryRun:         &executor.Result{DryRun: true, Preflight: executor.Preflight{ToPublish: 2, DurableFound: true}},
		Result:         &executor.Result{Published: 2, Final: final, JobStatus: "completed"},
		StreamAfterRun: 2, StreamAfterSecond: 2, ProviderCalls: 6, ProviderCallsAfterSecond: 6, Charges: 3, Receipts: 3,
		ChargedOnce: 1, Duplicates: 1, ExcludedCharged: []string{"evt-000000"},
	}
	got := strings.Join(demo.CompareExecute(truth, x), "\n")
	for _, want := range []string{
		"execute provider calls: expected 4, got 6",
		"execute targets charged exactly once: expected 2, got 1",
		"execute orders charged more than once: expected 0, got 1",
		"execute excluded events charged: expected [], got [evt-000000]",
		"execute second run refused by gate: expected job-status, got ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("CompareExecute lacks %q:\n%s", want, got)
		}
	}
	x.SecondRefusal = &executor.GateError{Gate: executor.GateStatus, Message: "job is already completed"}
	x.ProviderCalls, x.ProviderCallsAfterSecond, x.Charges, x.Receipts = 4, 4, 2, 2
	x.ChargedOnce, x.Duplicates, x.ExcludedCharged = 2, 0, nil
	if got := demo.CompareExecute(truth, x); len(got) > 0 {
		t.Errorf("a clean execute phase reported mismatches: %v", got)
	}
}
