// Package clip makes text quoted in messages, reports and tables fit a terminal: short, and
// with nothing in it a terminal would obey.
package clip

import "unicode/utf8"

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
