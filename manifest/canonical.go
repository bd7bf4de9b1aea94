package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// DigestPrefix names the digest algorithm in Manifest.Digest.
const DigestPrefix = "sha256:"

// canonicalForm encodes a manifest without its digest: the outer, empty Digest field is shallower
// than the embedded one, so encoding/json uses it and omits the key.
type canonicalForm struct {
	*Manifest
	Digest string `json:"manifestDigest,omitempty"`
}

// Canonical returns the canonical encoding of m that the digest covers: compact encoding/json output
// of every field except Digest, in struct field order, map keys sorted, no HTML escaping, times in
// UTC RFC 3339 with nanoseconds, and nil slices and maps encoded as empty ones.
func Canonical(m *Manifest) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeCanonical(&buf, m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ComputeDigest returns DigestPrefix + the lowercase hex SHA-256 of Canonical(m).
func ComputeDigest(m *Manifest) (string, error) {
	h := sha256.New()
	// Hashing the encoder's output directly saves a copy of the whole encoding (tens of MB for 1M targets).
	if err := writeCanonical(h, m); err != nil {
		return "", err
	}
	return DigestPrefix + hex.EncodeToString(h.Sum(nil)), nil
}

func writeCanonical(w io.Writer, m *Manifest) error {
	enc := json.NewEncoder(dropNewline{w})
	enc.SetEscapeHTML(false)
	if err := enc.Encode(canonicalForm{Manifest: normalized(m)}); err != nil {
		return fmt.Errorf("canonical encoding: %w", err)
	}
	return nil
}

// dropNewline removes the newline json.Encoder ends each value with. Compact encoding/json output
// holds no other raw newline (strings escape it), so dropping every trailing one is exact.
type dropNewline struct{ w io.Writer }

func (d dropNewline) Write(p []byte) (int, error) {
	n, err := d.w.Write(bytes.TrimSuffix(p, []byte{'\n'}))
	if err == nil {
		n = len(p)
	}
	return n, err
}

// Seal sets m.Digest to ComputeDigest(m). Call it after the last change to m.
func Seal(m *Manifest) error {
	d, err := ComputeDigest(m)
	if err != nil {
		return err
	}
	m.Digest = d
	return nil
}

// normalized returns a shallow copy of m in the form that is encoded: a decoded file and a freshly
// built manifest with the same content encode identically. EventIDs is shared, not copied.
func normalized(m *Manifest) *Manifest {
	c := *m
	c.CreatedAt = c.CreatedAt.UTC()
	c.Source.Since = utcPtr(c.Source.Since)
	c.Source.Until = utcPtr(c.Source.Until)
	c.EventIDs = orEmpty(c.EventIDs)
	if c.Stats.FailureReasons == nil {
		c.Stats.FailureReasons = map[string]int64{}
	}
	c.Excluded.Uncertain = normalizedExclusions(c.Excluded.Uncertain)
	c.Excluded.InFlight = normalizedExclusions(c.Excluded.InFlight)
	conflicts := make([]Conflict, len(c.Excluded.Conflicts))
	for i, x := range c.Excluded.Conflicts {
		x.PayloadHashes = orEmpty(x.PayloadHashes)
		conflicts[i] = x
	}
	c.Excluded.Conflicts = conflicts
	c.Excluded.MissingEventIDSeqs = orEmpty(c.Excluded.MissingEventIDSeqs)
	return &c
}

func normalizedExclusions(in []LedgerExclusion) []LedgerExclusion {
	out := make([]LedgerExclusion, len(in))
	for i, x := range in {
		x.LeaseExpiresAt = utcPtr(x.LeaseExpiresAt)
		out[i] = x
	}
	return out
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
