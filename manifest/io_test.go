package manifest_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/manifest"
)

func TestWriteFileAndLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.json")
	m := sealed(t, 50)
	if err := manifest.WriteFile(path, m); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	got, err := manifest.Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("Load returned a different manifest")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != string(fileForm(t, m)) {
		t.Errorf("WriteFile did not write the Encode form")
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o644 {
		t.Errorf("file mode = %v, want 0644", info.Mode().Perm())
	}
	assertOnlyFiles(t, dir, "job.json")
}

func TestWriteFileRefusesUnsealed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.json")
	old := sealed(t, 3)
	if err := manifest.WriteFile(path, old); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)

	unsealed := validManifest(t, 4)
	if err := manifest.WriteFile(path, unsealed); !errors.Is(err, manifest.ErrTampered) || !strings.Contains(err.Error(), "no digest") {
		t.Errorf("WriteFile(unsealed) = %v, want ErrTampered saying no digest", err)
	}
	stale := sealed(t, 4)
	stale.Reason = "provider outage INC-4521 fixed; re-run failed refunds"
	if err := manifest.WriteFile(path, stale); !errors.Is(err, manifest.ErrTampered) {
		t.Errorf("WriteFile(changed after Seal) = %v, want ErrTampered", err)
	}
	invalid := validManifest(t, 4)
	invalid.Reason = "fix"
	if err := manifest.Seal(invalid); err != nil {
		t.Fatal(err)
	}
	if err := manifest.WriteFile(path, invalid); !errors.Is(err, manifest.ErrInvalid) {
		t.Errorf("WriteFile(invalid) = %v, want ErrInvalid", err)
	}

	after, _ := os.ReadFile(path)
	if string(after) != string(before) {
		t.Errorf("a refused WriteFile changed the existing file")
	}
	assertOnlyFiles(t, dir, "job.json")
}

func TestWriteFileFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	// A directory in the way makes the rename fail after the temporary file was written.
	path := filepath.Join(dir, "job.json")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := manifest.WriteFile(path, sealed(t, 3)); err == nil || !strings.HasPrefix(err.Error(), "writing manifest "+path+": ") {
		t.Fatalf("WriteFile over a non-empty directory = %v, want a writing error", err)
	}
	assertOnlyFiles(t, dir, "job.json")
}

func TestLoadErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.json")
	if err := os.WriteFile(path, []byte(`{"apiVersion": "replayctl/v1", "extra": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := manifest.Load(path)
	want := "manifest " + path + ": malformed manifest: line 1, column 32: unknown field \"extra\" in $: replayctl/v1 has no such field; re-run `replayctl plan` instead of editing the file"
	if !errors.Is(err, manifest.ErrMalformed) || err.Error() != want {
		t.Errorf("Load = %v\nwant %s", err, want)
	}

	_, err = manifest.Load(filepath.Join(dir, "missing.json"))
	if !errors.Is(err, os.ErrNotExist) || errors.Is(err, manifest.ErrInvalid) {
		t.Errorf("Load(missing) = %v, want a not-exist error that is not ErrInvalid", err)
	}

	manifest.SetMaxFileSize(t, 10)
	if _, err := manifest.Load(path); !errors.Is(err, manifest.ErrMalformed) || !strings.Contains(err.Error(), "larger than the") {
		t.Errorf("Load(oversized) = %v, want ErrMalformed saying it is too large", err)
	}
}

func assertOnlyFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("directory holds %q, want %q", got, want)
	}
}
