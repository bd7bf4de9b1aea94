package manifest

import "testing"

// SetMaxFileSize lowers the file size limit for one test.
func SetMaxFileSize(t testing.TB, n int64) {
	old := maxFileSize
	maxFileSize = n
	t.Cleanup(func() { maxFileSize = old })
}
