// Package clip makes text quoted in messages, reports and tables fit a terminal: short, and
// with nothing in it a terminal would obey.
package clip

// Runes returns s cut to at most n runes, the last one an ellipsis when it was cut.
func Runes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
