package manifest

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/replayctl/replayctl/actor"
)

// MaxReasonRunes and MaxTicketRunes bound an operator's --reason and --ticket: they are stored on
// the job row and in every audit entry, and shown by show and status.
const (
	MaxReasonRunes = 2000
	MaxTicketRunes = 200
)

// MaxActorRunes bounds an operator's name (--actor, else $USER): it is stored on every audit
// entry, job transition and shadow verdict, and shown by status and execute.
const MaxActorRunes = 200

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

// ValidateActor refuses an operator name that cannot be recorded and shown as typed: empty, over
// MaxActorRunes characters, not UTF-8, with any control character (newline and tab included: a
// name is one line of status, and an escape sequence would rewrite the terminal of whoever reads
// it), or one that could pass for another name (package actor: invisible and bidirectional
// characters, letters of mixed scripts). The name recorded is actor.Normalize's.
func ValidateActor(name string) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("is empty; give the operator's name")
	}
	if err := ValidateText(name, MaxActorRunes); err != nil {
		return err
	}
	if i := strings.IndexAny(name, "\n\t"); i >= 0 {
		return fmt.Errorf("contains the control character %U at byte %d; retype it as plain text", rune(name[i]), i)
	}
	if _, err := actor.Normalize(name); err != nil {
		return err
	}
	return nil
}
