package clip_test

import (
	"testing"

	"github.com/replayctl/replayctl/internal/clip"
)

func TestRunesCutsOnARuneAndSaysSo(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"one too many", 11, "one too ma…"},
		{"ééééé", 3, "éé…"},
	} {
		if got := clip.Runes(c.in, c.n); got != c.want {
			t.Errorf("Runes(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
