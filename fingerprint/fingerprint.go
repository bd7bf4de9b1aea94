// Package fingerprint computes the request fingerprint that binds an event ID to one business intent.
// Both the planner (for DLQ payloads) and consumers (for the ledger's request_hash) use it, so a
// payload changed under the same event ID is seen as a conflict rather than replayed. docs/protocol.md
// specifies the algorithm for consumers not written in Go.
package fingerprint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Algorithm names the canonicalisation; it is stored beside every hash so that hashes made by
// different algorithms are never compared.
const Algorithm = "canonical-json-v1"

// Payload returns "sha256:<hex>" over the canonical form of payload: a JSON payload is re-encoded with
// object keys sorted, insignificant white space removed and numbers kept as written; anything that is
// not a single JSON value is hashed as its raw bytes.
func Payload(payload []byte) string {
	sum := sha256.Sum256(Canonical(payload))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Canonical returns the canonical bytes of payload as described for Payload.
func Canonical(payload []byte) []byte {
	if out, ok := canonicalFast(payload); ok {
		return out
	}
	return canonicalReference(payload)
}

// canonicalReference defines the canonical form: encoding/json's decoding (numbers kept as
// written) and re-encoding (keys sorted, no HTML escaping). The fast path must agree with it.
func canonicalReference(payload []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return payload
	}
	if len(bytes.TrimSpace(payload[dec.InputOffset():])) > 0 {
		return payload // trailing data: not one JSON value
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return payload
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
