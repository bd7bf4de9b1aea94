package apikey

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// MaxKeyLength bounds a key: the draft's keys are UUIDs or similar, and a longer one is a mistake.
const MaxKeyLength = 255

// ErrMalformed is what ParseKey, ValidKeyHash and ValidScopeHash return for a value no record can
// be stored under.
var ErrMalformed = errors.New("malformed")

// ParseKey reads an Idempotency-Key as the middleware does: the draft's Structured Field string
// ("\"8e03978e-…\"") or a bare token, of 1 to MaxKeyLength printable ASCII characters. The
// middleware and `replayctl keys show --key` share it, so an operator pasting the header's value
// as a caller sent it finds the record.
func ParseKey(value string) (string, error) {
	key := strings.TrimSpace(value)
	if len(key) >= 2 && key[0] == '"' && key[len(key)-1] == '"' {
		key = key[1 : len(key)-1]
	}
	if key == "" || len(key) > MaxKeyLength {
		return "", fmt.Errorf("%w: a key holds 1 to %d characters, got %d", ErrMalformed, MaxKeyLength, len(key))
	}
	for i, r := range key {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return "", fmt.Errorf("%w: a key holds printable ASCII without quotes or backslashes; character %d is %q", ErrMalformed, i+1, r)
		}
	}
	return key, nil
}

var (
	keyHashForm   = regexp.MustCompile(`^hmac-sha256:[0-9a-f]{64}$`)
	scopeHashForm = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// ValidKeyHash checks the stored form of a key (HashKey's): "hmac-sha256:" and 64 hex digits.
func ValidKeyHash(h string) error {
	if !keyHashForm.MatchString(h) {
		return fmt.Errorf("%w: a key hash is hmac-sha256: and 64 lowercase hex digits, as `keys uncertain` and the logs print it (a log line's 12 digits are a short form)", ErrMalformed)
	}
	return nil
}

// ValidScopeHash checks the stored form of a scope: "sha256:" and 64 hex digits.
func ValidScopeHash(h string) error {
	if !scopeHashForm.MatchString(h) {
		return fmt.Errorf("%w: a scope hash is sha256: and 64 lowercase hex digits, as `keys show` prints it", ErrMalformed)
	}
	return nil
}
