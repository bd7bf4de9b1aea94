// Package actor is the name an operator is recorded under in the audit log, approvals and job
// rows: one spelling per person. A name that looks like another (a trailing space, a zero-width
// character, a Cyrillic letter among Latin ones, a bidirectional override) is refused where it
// is given, and one already stored is shown with its tricks visible.
package actor

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// ErrInvalid matches every refusal of Normalize.
var ErrInvalid = errors.New("invalid actor name")

// MaxLength bounds a name, in runes (manifest.MaxActorRunes, which is checked first, is the same).
const MaxLength = 200

// Normalize returns name as it is recorded: trimmed and in Unicode NFC, so "é" typed as one
// character or as e and a combining accent is one name. It refuses an empty name, one with a
// control, invisible or bidirectional character, and one whose letters mix scripts (Latin "a"
// and Cyrillic "а" look alike: "аlice" would pass for "alice").
func Normalize(name string) (string, error) {
	n := norm.NFC.String(strings.TrimSpace(name))
	if n == "" {
		return "", fmt.Errorf("%w: the name is empty", ErrInvalid)
	}
	if c := len([]rune(n)); c > MaxLength {
		return "", fmt.Errorf("%w: %d characters, at most %d", ErrInvalid, c, MaxLength)
	}
	for i, r := range []rune(n) {
		switch {
		case unicode.IsControl(r):
			return "", fmt.Errorf("%w: character %d is the control character %U", ErrInvalid, i+1, r)
		case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) || (unicode.IsSpace(r) && r != ' '):
			return "", fmt.Errorf("%w: character %d is the invisible or bidirectional character %U, which would make this name look like another", ErrInvalid, i+1, r)
		}
	}
	if scripts := letterScripts(n); len(scripts) > 1 {
		return "", fmt.Errorf("%w: its letters mix scripts (%s), as a lookalike of another name would; write it in one script", ErrInvalid, strings.Join(scripts, " and "))
	}
	return n, nil
}

// Display is name as a table or the audit log prints it: unchanged when Normalize would accept
// it, else every character outside printable ASCII written as a \u escape, so a lookalike stored
// before names were checked (or written to the ledger by hand) cannot pass for another name.
func Display(name string) string {
	if n, err := Normalize(name); err == nil && n == name {
		return name
	}
	var b strings.Builder
	for _, r := range name {
		if r >= 0x20 && r < 0x7f {
			b.WriteRune(r)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// confusableGroups are scripts whose letters are written together in one name (Japanese mixes
// kanji and kana, Korean hanja and hangul): one group counts as one script.
var confusableGroups = map[string]string{
	"Han": "Han", "Hiragana": "Han", "Katakana": "Han", "Hangul": "Han", "Bopomofo": "Han",
}

// letterScripts lists the scripts of name's letters, Common and Inherited (digits, punctuation,
// combining marks) aside.
func letterScripts(name string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range name {
		if !unicode.IsLetter(r) {
			continue
		}
		for script, table := range unicode.Scripts {
			if script == "Common" || script == "Inherited" || !unicode.Is(table, r) {
				continue
			}
			if g, ok := confusableGroups[script]; ok {
				script = g
			}
			if !seen[script] {
				seen[script] = true
				out = append(out, script)
			}
			break
		}
	}
	return out
}
