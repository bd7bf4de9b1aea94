package manifest

const maxQuoted = 80

// clip shortens s for an error message, on a byte boundary: %q shows any split rune as an escape.
func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return s[:maxQuoted]
}
