package apikey

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// HashKey is the stored form of a raw idempotency key: HMAC-SHA-256 under the service's secret.
// The middleware and `replayctl keys show` compute the same, so an operator finds a key a
// customer quoted without the ledger ever holding it.
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

// ScopeHash is the stored scope of a request: its tenant, principal and route (method and
// template). The same key under another scope is another record.
func ScopeHash(tenant, principal, route string) string {
	return hashParts("scope", tenant, principal, route)
}

// ClientHash names a caller (tenant and principal) in the daily counts without naming it.
func ClientHash(tenant, principal string) string { return hashParts("client", tenant, principal) }

// OperationID is the provider-facing ID of one record's intent, derived from its scope and key
// hashes: a look-up finds the provider's call by it even after the record was pruned, and it
// reveals neither the key nor the caller.
func OperationID(scopeHash, keyHash string) string {
	return "op_" + strings.TrimPrefix(hashParts("operation", scopeHash, keyHash), "sha256:")[:32]
}

// ShortHash is how a hash appears in logs and tables: its first 12 hex digits.
func ShortHash(h string) string {
	if i := strings.IndexByte(h, ':'); i >= 0 {
		h = h[i+1:]
	}
	return h[:min(12, len(h))]
}
