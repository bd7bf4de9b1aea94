package manifest_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/replayctl/replayctl/manifest"
)

// FuzzDecode checks that Decode never panics, that every error it returns for bytes in memory
// matches ErrInvalid, and that whatever it accepts survives Encode and Decode unchanged.
// Seeds are in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := manifest.Decode(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, manifest.ErrInvalid) {
				t.Fatalf("Decode error %v (%T) does not match ErrInvalid", err, err)
			}
			return
		}
		var buf bytes.Buffer
		if err := manifest.Encode(&buf, m); err != nil {
			t.Fatalf("Encode of an accepted manifest: %v", err)
		}
		again, err := manifest.Decode(&buf)
		if err != nil {
			t.Fatalf("Decode of a re-encoded accepted manifest: %v", err)
		}
		if again.Digest != m.Digest {
			t.Fatalf("digest changed across Encode and Decode: %s -> %s", m.Digest, again.Digest)
		}
	})
}
