package demo_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/demo"
	"github.com/replayctl/replayctl/internal/pgtest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/shadow"
)

// TestDemoMatchesTheSeededTruth runs the demo end to end in the test's own schema: the plan and the
// shadow must agree with the seed on every figure, the tampered copy must be refused as tampered,
// and the shadow pass must not have reached the payment provider.
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
	// 3 in flight), and 90 of the ordinary events from index 100 completed before (i%10 == 3).
	if report.Truth.Targets != 986 || report.Truth.CompletedUnderOlderVersion != 90 || report.Truth.Scanned != 1007 {
		t.Fatalf("seed truth drifted: %+v", report.Truth)
	}
	if !errors.Is(report.TamperedRefusal, manifest.ErrTampered) {
		t.Fatalf("tampered copy: %v, want ErrTampered", report.TamperedRefusal)
	}
	if len(steps) != 5 {
		t.Errorf("narrated %d steps, want 5: %v", len(steps), steps)
	}
	if report.ProviderCallsDuringShadow != 0 || report.Shadow.Totals.ShadowExternalCalls != 2*report.Truth.Targets {
		t.Errorf("shadow: provider received %d calls, shadow recorded %d (want 0 and %d)",
			report.ProviderCallsDuringShadow, report.Shadow.Totals.ShadowExternalCalls, 2*report.Truth.Targets)
	}
	if report.Truth.ShadowChanged == 0 || report.Shadow.Totals.Changed != report.Truth.ShadowChanged {
		t.Errorf("shadow changed %d, seeded %d (must be above 0)", report.Shadow.Totals.Changed, report.Truth.ShadowChanged)
	}
	store, err := ledger.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	job, err := store.JobsGet(ctx, report.Plan.Manifest.ID)
	if err != nil || job.ManifestDigest != report.Plan.Manifest.Digest {
		t.Fatalf("job %+v, %v", job, err)
	}
}

func TestCompareShadowNamesProviderCallsAndMissedFields(t *testing.T) {
	truth := demo.Truth{Targets: 2}
	r := &shadow.Report{Totals: shadow.Totals{Targets: 2, Answered: 2, NoOriginal: 2, ShadowExternalCalls: 4}, Verdict: shadow.Verdict{Pass: true}}
	got := strings.Join(demo.CompareShadow(truth, r, 3), "\n")
	for _, want := range []string{"provider calls during the shadow pass: expected 0, got 3", "feeCents", "processedAt"} {
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
