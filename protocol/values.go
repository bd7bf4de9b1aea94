package protocol

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/replayctl/replayctl/internal/clip"
)

// MaxSubjectBytes bounds a Dlq-Original-Subject: the subject goes into a NATS protocol line whose
// default limit (max_control_line) is 4096 bytes, together with the reply subject and sizes.
const MaxSubjectBytes = 1024

// ValidatePublishSubject reports whether subject can be published to, as Dlq-Original-Subject must
// be: dot-separated non-empty tokens, no wildcard token (* or >), no white space or control
// characters, valid UTF-8, at most MaxSubjectBytes. A subject failing this would make execute's
// publish fail on every retry (white space splits the protocol line), or store text PostgreSQL
// refuses (a NUL byte, invalid UTF-8), failing the whole plan for one message.
func ValidatePublishSubject(subject string) error {
	switch {
	case subject == "":
		return fmt.Errorf("subject is empty")
	case len(subject) > MaxSubjectBytes:
		return fmt.Errorf("subject %q... is %d bytes; the limit is %d", clip.Runes(subject, quotedValueRunes), len(subject), MaxSubjectBytes)
	case !utf8.ValidString(subject):
		return fmt.Errorf("subject %q is not valid UTF-8", clip.Runes(subject, quotedValueRunes))
	}
	for _, r := range subject {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("subject %q contains the white space or control character %U", clip.Runes(subject, quotedValueRunes), r)
		}
	}
	for _, token := range strings.Split(subject, ".") {
		switch token {
		case "":
			return fmt.Errorf("subject %q has an empty token (a leading, trailing or doubled '.')", clip.Runes(subject, quotedValueRunes))
		case "*", ">":
			return fmt.Errorf("subject %q contains the wildcard token %q; a message is published to one literal subject", clip.Runes(subject, quotedValueRunes), token)
		}
	}
	return nil
}

// ParseEffectVersion reads a Replay-Effect-Version value: a decimal integer from 1 to 2^31-1 (the
// ledger's column is a PostgreSQL integer), written without sign, padding or leading zeros, as
// strconv.Itoa writes it. A version the ledger cannot store would fail every ledger query
// for the message, so it is refused as invalid instead of retried.
func ParseEffectVersion(s string) (int, error) {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v <= 0 || strconv.FormatInt(v, 10) != s {
		return 0, fmt.Errorf("%s is %q, want an integer from 1 to %d", HeaderReplayEffectVersion, clip.Runes(s, quotedValueRunes), math.MaxInt32)
	}
	return int(v), nil
}

// ValidateSubjectFilter reports whether filter can select messages of a stream: dot-separated
// non-empty tokens without white space or control characters, where a token may be the wildcard *
// and only the last may be >.
func ValidateSubjectFilter(filter string) error {
	if filter == "" || strings.ContainsFunc(filter, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) ||
		!utf8.ValidString(filter) {
		return fmt.Errorf("subject filter %q is not allowed: use dot-separated tokens without white space or control characters", clip.Runes(filter, quotedValueRunes))
	}
	tokens := strings.Split(filter, ".")
	for i, token := range tokens {
		switch {
		case token == "":
			return fmt.Errorf("subject filter %q has an empty token (a leading, trailing or doubled '.')", clip.Runes(filter, quotedValueRunes))
		case token == ">" && i != len(tokens)-1:
			return fmt.Errorf("subject filter %q has '>' before its last token; '>' matches the rest of a subject", clip.Runes(filter, quotedValueRunes))
		}
	}
	return nil
}
