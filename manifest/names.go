package manifest

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

const (
	maxConsumerName = 64
	maxStreamName   = 255
	maxEventIDBytes = 256
	// maxQuoted bounds how much of a rejected value an error message repeats.
	maxQuoted = 80
)

// ValidateConsumerName reports whether name can be a consumer name: 1 to 64 characters from
// A-Z a-z 0-9 _ -, because it becomes the NATS subject token in replay.shadow.<consumer>.
func ValidateConsumerName(name string) error {
	if !isNameToken(name, maxConsumerName) {
		return fmt.Errorf("consumer name %q is not allowed: use 1-%d characters from A-Z a-z 0-9 _ - "+
			"(it becomes the NATS subject token in replay.shadow.<consumer>)", clip(name), maxConsumerName)
	}
	return nil
}

// ValidateStreamName reports whether name can be a JetStream stream name here: 1 to 255
// characters from A-Z a-z 0-9 _ -.
func ValidateStreamName(name string) error {
	if !isNameToken(name, maxStreamName) {
		return fmt.Errorf("stream name %q is not allowed: use 1-%d characters from A-Z a-z 0-9 _ -",
			clip(name), maxStreamName)
	}
	return nil
}

// ValidateEventID reports whether id can be a replay target: non-empty, at most 256 bytes, valid
// UTF-8, no control characters and no leading or trailing white space.
func ValidateEventID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("event ID is empty")
	case len(id) > maxEventIDBytes:
		return fmt.Errorf("event ID %q... is %d bytes; the limit is %d", clip(id), len(id), maxEventIDBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("event ID %q is not valid UTF-8", clip(id))
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return fmt.Errorf("event ID %q contains the control character %U", clip(id), r)
		}
	}
	first, _ := utf8.DecodeRuneInString(id)
	last, _ := utf8.DecodeLastRuneInString(id)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return fmt.Errorf("event ID %q has leading or trailing white space", clip(id))
	}
	return nil
}

// ValidateHeaderName accepts printable ASCII without ':' or space, as NATS header names require.
func ValidateHeaderName(name string) error {
	if name == "" {
		return fmt.Errorf("header name is empty")
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' || c == ':' {
			return fmt.Errorf("header name %q is not allowed: use printable ASCII without ':' or spaces", clip(name))
		}
	}
	return nil
}

func isNameToken(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// clip shortens s for an error message, on a byte boundary: %q shows any split rune as an escape.
func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return s[:maxQuoted]
}
