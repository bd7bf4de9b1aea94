package manifest_test

import (
	"path/filepath"
	"testing"

	"github.com/replayctl/replayctl/manifest"
)

const benchTargets = 1_000_000

func BenchmarkLoad1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "job.json")
	m := sealed(b, benchTargets)
	if err := manifest.WriteFile(path, m); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		got, err := manifest.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		if len(got.EventIDs) != benchTargets {
			b.Fatalf("loaded %d targets, want %d", len(got.EventIDs), benchTargets)
		}
	}
}

func BenchmarkComputeDigest1M(b *testing.B) {
	m := validManifest(b, benchTargets)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := manifest.ComputeDigest(m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate1M(b *testing.B) {
	m := validManifest(b, benchTargets)
	b.ReportAllocs()
	for b.Loop() {
		if err := manifest.Validate(m); err != nil {
			b.Fatal(err)
		}
	}
}
