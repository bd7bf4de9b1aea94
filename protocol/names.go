package protocol

import (
	"fmt"
	"regexp"
	"unicode"
	"unicode/utf8"

	"github.com/replayctl/replayctl/internal/clip"
)

// The names a manifest, a DLQ message, a replayed message and the SDK's Config all carry: the
// consumer, the stream, the event, the job and the headers that hold them. Both ends check them
// with the same functions, so a name the SDK accepts is one replayctl can plan for.

const (
	maxConsumerName = 64
	maxStreamName   = 255
	maxEventIDBytes = 256
	// maxQuoted bounds how much of a rejected value an error message repeats.
	maxQuoted = 80
)

var jobIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidateConsumerName reports whether name can be a consumer name: 1 to 64 characters from
// A-Z a-z 0-9 _ -, because it becomes the NATS subject token in replay.shadow.<consumer>.
func ValidateConsumerName(name string) error {
	if !isNameToken(name, maxConsumerName) {
		return fmt.Errorf("consumer name %q is not allowed: use 1-%d characters from A-Z a-z 0-9 _ - "+
			"(it becomes the NATS subject token in replay.shadow.<consumer>)", clip.Bytes(name, maxQuoted), maxConsumerName)
	}
	return nil
}

// ValidateStreamName reports whether name can be a JetStream stream name here: 1 to 255
// characters from A-Z a-z 0-9 _ -.
func ValidateStreamName(name string) error {
	if !isNameToken(name, maxStreamName) {
		return fmt.Errorf("stream name %q is not allowed: use 1-%d characters from A-Z a-z 0-9 _ -",
			clip.Bytes(name, maxQuoted), maxStreamName)
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
		return fmt.Errorf("event ID %q... is %d bytes; the limit is %d", clip.Bytes(id, maxQuoted), len(id), maxEventIDBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("event ID %q is not valid UTF-8", clip.Bytes(id, maxQuoted))
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return fmt.Errorf("event ID %q contains the control character %U", clip.Bytes(id, maxQuoted), r)
		}
	}
	first, _ := utf8.DecodeRuneInString(id)
	last, _ := utf8.DecodeLastRuneInString(id)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return fmt.Errorf("event ID %q has leading or trailing white space", clip.Bytes(id, maxQuoted))
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
			return fmt.Errorf("header name %q is not allowed: use printable ASCII without ':' or spaces", clip.Bytes(name, maxQuoted))
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

// ValidateJobID reports whether id can be a job ID: 1 to 128 characters from A-Z a-z 0-9 . _ -,
// starting with a letter or digit.
func ValidateJobID(id string) error {
	if !jobIDPattern.MatchString(id) {
		return fmt.Errorf("job ID %q is not allowed: use 1-128 characters from A-Z a-z 0-9 . _ -, "+
			"starting with a letter or digit", clip.Bytes(id, maxQuoted))
	}
	return nil
}
