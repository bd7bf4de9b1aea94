package manifest

import (
	"fmt"

	"github.com/replayctl/replayctl/internal/clip"
)

// Verify reports whether m is fit to use: Validate, then the digest check. A missing or wrong
// digest is an ErrTampered error saying which digest was expected and which was found.
func Verify(m *Manifest) error {
	if err := Validate(m); err != nil {
		return err
	}
	if m.Digest == "" {
		return fmt.Errorf("%w: no digest; the manifest was not sealed by `replayctl plan`; "+
			"re-run `replayctl plan` instead of writing it by hand", ErrTampered)
	}
	want, err := ComputeDigest(m)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if m.Digest != want {
		return fmt.Errorf("%w: expected %s (computed from the content), found %q; "+
			"the manifest was edited after plan; re-run `replayctl plan` instead of editing it",
			ErrTampered, want, clip.Bytes(m.Digest, maxQuoted))
	}
	return nil
}
