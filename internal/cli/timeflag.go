package cli

import (
	"strings"
	"time"
)

// parseTimeFlag reads --since/--until: an RFC 3339 time, a date (UTC midnight), or a duration
// meaning that long before now ("6h", "90m"), the form an on-call engineer types fastest.
func parseTimeFlag(flag, value string, now time.Time) (*time.Time, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, value); err == nil {
		return &t, nil
	}
	if t, err := time.Parse(time.DateOnly, value); err == nil {
		return &t, nil
	}
	if d, err := time.ParseDuration(value); err == nil && d > 0 {
		t := now.Add(-d)
		return &t, nil
	}
	return nil, usageErrorf("--%s %q: want an RFC 3339 time (2026-12-02T03:00:00Z), a date (2026-12-02) or a duration before now (6h)", flag, value)
}
