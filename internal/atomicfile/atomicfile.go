// Package atomicfile writes a file so that a reader, or a crash, sees either the old content or
// the whole new content, never a part: the manifest and the shadow report are evidence an
// operator acts on.
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// Write creates or replaces the file at path with what write produces, with mode perm: it writes
// a temporary file in the same directory, syncs it, renames it over path and syncs the directory.
// On any error the temporary file is removed and path is left as it was.
func Write(path string, perm os.FileMode, write func(w io.Writer) error) error {
	return put(path, perm, write, os.Rename)
}

// WriteNew is Write for a path that must not exist yet: the finished file is linked into place,
// which fails with an error matching fs.ErrExist when a file appeared there meanwhile, instead of
// replacing it.
func WriteNew(path string, perm os.FileMode, write func(w io.Writer) error) error {
	return put(path, perm, write, func(tmp, path string) error {
		if err := os.Link(tmp, path); err != nil {
			return err
		}
		return os.Remove(tmp)
	})
}

func put(path string, perm os.FileMode, write func(w io.Writer) error, place func(tmp, path string) error) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := place(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// DirExists reports whether path is an existing directory. Callers check the directory of a file
// they will write before the long work that produces it, so a mistyped path fails at once.
func DirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
