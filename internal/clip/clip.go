// Package clip makes text quoted in messages, reports and tables fit a terminal: short, and
// with nothing in it a terminal would obey.
package clip

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Runes returns s cut to at most n runes, the last one an ellipsis when it was cut.
func Runes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// Bytes returns s cut to at most n bytes on a rune boundary, with no mark: for a value quoted with
// %q in an error, or stored in a column or a header of bounded size.
func Bytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Flat returns s as one line of valid UTF-8: each invalid byte sequence becomes invalid, each
// control character (newlines included) a space. What a producer or a handler wrote then fits a
// NATS header and a PostgreSQL text column, and counts as one key however it was broken.
func Flat(s, invalid string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, invalid))
}

// Stored is Flat with "?" for invalid bytes, cut to at most n bytes: error text the SDK stores
// in a ledger column or sends in a header.
func Stored(s string, n int) string { return Bytes(Flat(s, "?"), n) }

// Cell keeps a table cell to one readable line: trimmed, at most 100 runes.
func Cell(s string) string { return Runes(strings.TrimSpace(s), 100) }
