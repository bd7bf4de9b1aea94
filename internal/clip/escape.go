package clip

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line returns s with every character a terminal would act on written as a Go escape: control
// characters (ESC, so no OSC title or colour sequence reaches the screen; CR; newline and tab, so
// one value stays one line or one cell), the C1 controls, bidirectional overrides, invisible
// format characters (zero-width space, soft hyphen), and bytes that are not UTF-8 ("\xff"). Other text, non-ASCII included, is left as it is. Every string that
// comes from the ledger, a manifest or a producer is printed through it.
func Line(s string) string { return escape(s, false) }

// Text is Line that keeps newlines and tabs, for a multi-line message such as an error.
func Text(s string) string { return escape(s, true) }

func escape(s string, keepLayout bool) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return needsEscape(r, keepLayout) }) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !needsEscape(r, keepLayout):
			b.WriteString(s[i : i+size])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

func needsEscape(r rune, keepLayout bool) bool {
	switch {
	case keepLayout && (r == '\n' || r == '\t'):
		return false
	case r < 0x20 || 0x7f <= r && r <= 0x9f, r == utf8.RuneError:
		return true
	// Bidirectional embeddings, overrides and isolates reorder what follows on the screen;
	// invisible format characters (a zero-width space, a soft hyphen) make one name look like
	// another.
	case isBidi(r), unicode.Is(unicode.Cf, r):
		return true
	}
	return false
}

// JSONBidi rewrites, in encoded JSON, every bidirectional control character (which reorders
// what follows on the screen) as its \uXXXX escape: the same JSON value, but a document or a
// report read in a terminal or an editor shows the bytes as they are.
func JSONBidi(data []byte) []byte {
	if !bytes.ContainsFunc(data, isBidi) {
		return data
	}
	var b bytes.Buffer
	b.Grow(len(data) + 16)
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		if isBidi(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
		} else {
			b.Write(data[:size])
		}
		data = data[size:]
	}
	return b.Bytes()
}

func isBidi(r rune) bool {
	return 0x202a <= r && r <= 0x202e || 0x2066 <= r && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}
