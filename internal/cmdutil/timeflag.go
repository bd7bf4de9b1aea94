package cmdutil

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Every flag that takes a length of time or a point in time reads it with parseDuration, so "2d"
// means the same to plan --since, ledger stats --window and shadow --timeout.

const (
	day  = 24 * time.Hour
	week = 7 * day
	// maxDays bounds the day and week counts, far below where time.Duration overflows.
	maxDays = 100 * 366
)

// calendarDuration matches a length of time with optional leading weeks and days and a Go
// duration after them: "2w", "3d", "1d12h", "90m".
var calendarDuration = regexp.MustCompile(`^(?:(\d+)w)?(?:(\d+)d)?(.*)$`)

// ParseDuration reads a length of time as Go writes it ("36h", "90m", "1h30m"), in days ("2d")
// or weeks ("1w"), or both followed by a Go duration ("1d12h"): the forms an on-call engineer
// types. It accepts zero and refuses negative values; callers that need a positive one check.
func ParseDuration(value string) (time.Duration, bool) {
	m := calendarDuration.FindStringSubmatch(strings.TrimSpace(value))
	if m == nil || m[0] == "" {
		return 0, false
	}
	var total time.Duration
	for i, unit := range []time.Duration{week, day} {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.Atoi(m[i+1])
		if err != nil || n > maxDays {
			return 0, false
		}
		total += time.Duration(n) * unit
	}
	if rest := m[3]; rest != "" {
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 {
			return 0, false
		}
		total += d
	}
	return total, total >= 0
}

// durationForms names what parseDuration reads, for error messages and help.
const durationForms = "length of time in weeks (1w), days (2d), hours or minutes (6h, 90m), or a mix (1d12h)"

// ParseSpan reads a flag that takes a positive length of time (parseDuration's forms).
func ParseSpan(flag, value string) (time.Duration, error) {
	if d, ok := ParseDuration(value); ok && d > 0 {
		return d, nil
	}
	return 0, UsageErrorf("--%s %q: want a positive %s", flag, value, durationForms)
}

// SpanString writes d the way parseDuration reads it, in whole days from two days up ("24h", "7d").
func SpanString(d time.Duration) string {
	if d >= 2*day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// durationValue is a pflag.Value for duration flags that reads parseDuration's forms, so the
// flags cobra would parse with time.ParseDuration take "2d" like the others.
type durationValue struct{ d *time.Duration }

// NewDurationValue sets *d to def and returns the flag value that writes it.
func NewDurationValue(d *time.Duration, def time.Duration) *durationValue {
	*d = def
	return &durationValue{d}
}

// Set reads s; a negative value ("-1s") is read as such, as pflag's own duration flags do, for
// the command's check to refuse it naming the flag.
func (v *durationValue) Set(s string) error {
	rest, negative := strings.CutPrefix(strings.TrimSpace(s), "-")
	d, ok := ParseDuration(rest)
	if !ok {
		return errors.New("want a " + durationForms)
	}
	if negative {
		d = -d
	}
	*v.d = d
	return nil
}

func (v *durationValue) String() string { return SpanString(*v.d) }

func (v *durationValue) Type() string { return "duration" }

// ParseTimeFlag reads --since/--until: an RFC 3339 time, a date (UTC midnight), or a length of
// time meaning that long before now ("6h", "2d"), the form an on-call engineer types fastest.
func ParseTimeFlag(flag, value string, now time.Time) (*time.Time, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, value); err == nil {
		return &t, nil
	}
	if t, err := time.Parse(time.DateOnly, value); err == nil {
		return &t, nil
	}
	if d, ok := ParseDuration(value); ok && d > 0 {
		t := now.Add(-d)
		return &t, nil
	}
	return nil, UsageErrorf("--%s %q: want an RFC 3339 time (2026-12-02T03:00:00Z), a date (2026-12-02) or a %s before now", flag, value, durationForms)
}
