package manifest

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxReasonRunes and MaxTicketRunes bound an operator's --reason and --ticket: they are stored on
// the job row and in every audit entry, and shown by show and status.
const (
	MaxReasonRunes = 2000
	MaxTicketRunes = 200
)

// ValidateText refuses operator text that cannot be stored or shown as typed: over maxRunes
// characters, not UTF-8, or with control characters other than newline and tab (PostgreSQL
// refuses NUL, and terminal escapes would rewrite the screen of whoever runs show or status).
func ValidateText(s string, maxRunes int) error {
	switch n := utf8.RuneCountInString(s); {
	case !utf8.ValidString(s):
		return fmt.Errorf("is not valid UTF-8")
	case n > maxRunes:
		return fmt.Errorf("is %d characters; the limit is %d: put the details in the ticket", n, maxRunes)
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Errorf("contains the control character %U at byte %d; retype it as plain text", r, i)
	}
	return nil
}
