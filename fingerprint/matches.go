package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

const payloadPrefix = "sha256:"

// PayloadMatches reports whether Payload(payload) == want without spelling the fingerprint out:
// execute checks every message it replays against the plan's, and the two strings Payload
// allocates were garbage per target.
func PayloadMatches(payload []byte, want string) bool {
	wantHex, ok := strings.CutPrefix(want, payloadPrefix)
	if !ok || len(wantHex) != 2*sha256.Size {
		return false
	}
	sum := sha256.Sum256(Canonical(payload))
	var got [2 * sha256.Size]byte
	hex.Encode(got[:], sum[:])
	return string(got[:]) == wantHex
}
