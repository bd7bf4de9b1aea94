package idempotency

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
)

// KeyHeader is the request header of the IETF httpapi Idempotency-Key draft.
const KeyHeader = "Idempotency-Key"

// ReplayedHeader marks a response given from the ledger rather than by the handler.
const ReplayedHeader = "Idempotent-Replayed"

// maxKeyLength bounds a key: the draft's keys are UUIDs or similar, and a longer one is a mistake.
const maxKeyLength = 255

var errBadKey = errors.New("bad key")

// requestKey reads the request's key. The draft sends it as a Structured Field string
// ("\"8e03978e-…\""); a bare token is accepted too. present is false when there is none.
func requestKey(h http.Header) (key string, present bool, err error) {
	values := h.Values(KeyHeader)
	if len(values) == 0 {
		return "", false, nil
	}
	if len(values) > 1 {
		return "", true, errBadKey
	}
	key = strings.TrimSpace(values[0])
	if len(key) >= 2 && key[0] == '"' && key[len(key)-1] == '"' {
		key = key[1 : len(key)-1]
	}
	if key == "" || len(key) > maxKeyLength {
		return "", true, errBadKey
	}
	for _, r := range key {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return "", true, errBadKey
		}
	}
	return key, true, nil
}

// HashKey is the stored form of a raw key: HMAC-SHA-256 under secret, hex. `replayctl keys
// show` computes the same to find a key an operator was given.
func HashKey(secret []byte, rawKey string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(rawKey))
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
}

// hashParts is sha256 over length-prefixed parts, so ("ab", "c") and ("a", "bc") differ.
func hashParts(parts ...string) string {
	h := sha256.New()
	var n [4]byte
	for _, p := range parts {
		binary.BigEndian.PutUint32(n[:], uint32(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ScopeHash is the stored scope of a request: tenant, principal, method and route template.
func ScopeHash(s Scope, route string) string { return hashParts("scope", s.Tenant, s.Principal, route) }

// ClientHash names a caller in the daily counts without naming it.
func ClientHash(s Scope) string { return hashParts("client", s.Tenant, s.Principal) }

// operationID is the provider-facing ID of one intent: derived from the record's key, so a
// look-up can find the call even after the record was pruned, and revealing neither the key
// nor the caller.
func operationID(scopeHash, keyHash string) string {
	return "op_" + strings.TrimPrefix(hashParts("operation", scopeHash, keyHash), "sha256:")[:32]
}

// shortHash is how a hash appears in a log line.
func shortHash(h string) string {
	if i := strings.IndexByte(h, ':'); i >= 0 {
		h = h[i+1:]
	}
	return h[:min(12, len(h))]
}
