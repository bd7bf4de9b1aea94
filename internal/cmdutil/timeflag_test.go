package cmdutil

import (
	"testing"
	"time"
)

// sinceNow is the clock of the time-flag tests.
var sinceNow = time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)

func TestParseDurationReadsDaysWeeksAndGoDurations(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"90m":   90 * time.Minute,
		"1h30m": 90 * time.Minute,
		"2d":    48 * time.Hour,
		"1w":    7 * 24 * time.Hour,
		"1w2d":  9 * 24 * time.Hour,
		"1d12h": 36 * time.Hour,
		" 3d ":  72 * time.Hour,
		"0":     0,
	} {
		if got, ok := ParseDuration(in); !ok || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "d", "2x", "-1d", "-6h", "1d-30h", "2d1w", "999999d", "1.5d"} {
		if got, ok := ParseDuration(in); ok {
			t.Errorf("ParseDuration(%q) = %v, accepted", in, got)
		}
	}
}

func TestSinceTakesDaysLikeTheOtherDurationFlags(t *testing.T) {
	t.Parallel()
	got, err := ParseTimeFlag("since", "2d", sinceNow)
	if err != nil || !got.Equal(sinceNow.Add(-48*time.Hour)) {
		t.Fatalf("--since 2d = %v, %v; want %v", got, err, sinceNow.Add(-48*time.Hour))
	}
}
