package atomicfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/replayctl/replayctl/internal/atomicfile"
)

func TestWriteReplacesWholeFileWithMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(path, 0o600, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	info, _ := os.Stat(path)
	if err != nil || string(data) != "new" || info.Mode().Perm() != 0o600 {
		t.Fatalf("content %q, mode %v, %v", data, info.Mode().Perm(), err)
	}
}

func TestWriteFailureLeavesOldFileAndNoTemporary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("encoder failed")
	err := atomicfile.Write(path, 0o644, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want the writer's error", err)
	}
	data, _ := os.ReadFile(path)
	entries, _ := os.ReadDir(dir)
	if string(data) != "old" || len(entries) != 1 {
		t.Fatalf("content %q, %d entries in the directory; want the old file alone", data, len(entries))
	}
}

func TestWriteNewRefusesAnExistingFileAndLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.json")
	write := func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }
	if err := atomicfile.WriteNew(path, 0o644, write); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteNew(path, 0o644, write); !errors.Is(err, os.ErrExist) {
		t.Fatalf("WriteNew over an existing file: %v, want an error matching fs.ErrExist", err)
	}
	data, _ := os.ReadFile(path)
	entries, _ := os.ReadDir(dir)
	if string(data) != "old" || len(entries) != 1 {
		t.Fatalf("content %q, %d entries in the directory; want the old file alone", data, len(entries))
	}
}
