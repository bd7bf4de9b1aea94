// Package fingerprint computes the request fingerprint that binds an event ID to one business intent.
// Both the planner (for DLQ payloads) and consumers (for the ledger's request_hash) use it, so a
// payload changed under the same event ID is seen as a conflict rather than replayed. docs/protocol.md
// specifies the algorithm for consumers not written in Go.
package fingerprint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
)

// Algorithm names the v1 canonicalisation, which takes no options. It is stored beside every
// hash so that a hash is only ever compared with one recomputed under the same algorithm; rows
// written under it stay comparable after consumers moved to v2 (Hasher).
const Algorithm = "canonical-json-v1"

// Payload returns the v1 fingerprint, "sha256:<hex>" over the canonical form of payload: a JSON
// payload is re-encoded with object keys sorted, insignificant white space removed and numbers
// kept as written; anything that is not a single JSON value is hashed as its raw bytes. Result
// hashes use it too.
func Payload(payload []byte) string {
	sum := sha256.Sum256(Canonical(payload))
	return payloadPrefix + hex.EncodeToString(sum[:])
}

// Canonical returns the canonical bytes of payload as described for Payload.
func Canonical(payload []byte) []byte {
	if out, ok := canonicalFast(payload); ok {
		return out
	}
	return canonicalReference(payload)
}

// canonicalReference defines the v1 canonical form: encoding/json's decoding (numbers kept as
// written) and re-encoding (keys sorted, no HTML escaping). The fast path must agree with it.
// v1 allows any Unicode white space after the value (bytes.TrimSpace); v2 is stricter.
func canonicalReference(payload []byte) []byte {
	v, rest, ok := decodeFirst(payload)
	if !ok || len(bytes.TrimSpace(rest)) > 0 {
		return payload
	}
	out, err := encodeCanonical(v)
	if err != nil {
		return payload
	}
	return out
}
