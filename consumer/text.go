package consumer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Lengths stored for error text: Dlq-Reason is a plan's histogram key, last_error a note for
// whoever reviews the row.
const (
	maxReasonBytes    = 200
	maxLastErrorBytes = 1000
)

// clipText makes error text safe for a NATS header and a PostgreSQL text column (valid UTF-8, no
// NUL, no line breaks) and cuts it to at most n bytes on a rune boundary.
func clipText(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
