package natsconn

import (
	"strings"

	"github.com/replayctl/replayctl/internal/natsurl"
)

// Scrub returns text with every secret of s removed: the password and token however they were
// given, the credentials of its server URLs, and anything shaped like an NKey seed or a JWT (the
// contents of a creds or nkey file, which nats.go reads itself).
func (s Settings) Scrub(text string) string {
	text = natsurl.Scrub(text, s.servers.value)
	for _, secret := range s.secrets() {
		text = strings.ReplaceAll(text, secret, natsurl.Redacted)
	}
	return natsurl.RedactKeys(text)
}

// scrubError returns err with Scrub applied to its message, keeping its chain for errors.Is.
func scrubError(err error, s Settings) error {
	msg := err.Error()
	if scrubbed := s.Scrub(msg); scrubbed != msg {
		return &scrubbedError{msg: scrubbed, err: err}
	}
	return err
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }

func (e *scrubbedError) Unwrap() error { return e.err }
