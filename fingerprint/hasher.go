package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// V2Prefix starts the name of every v2 algorithm; 8 hex digits of the options digest follow.
const V2Prefix = "sha256-canon-v2+"

// ErrUnknownAlgorithm means a stored fingerprint was made by an algorithm this process cannot
// compute (a newer version, or v2 options it was never told). Its hash cannot be compared, so the
// event must be refused, never processed as if it matched.
var ErrUnknownAlgorithm = errors.New("unknown fingerprint algorithm")

// Hasher computes request fingerprints under one algorithm.
type Hasher struct {
	alg     string
	opts    Options
	exclude []pattern
	sets    []pattern
}

// V1 returns the hasher of canonical-json-v1 (Payload), which takes no options.
func V1() Hasher { return Hasher{alg: Algorithm} }

// New returns the v2 hasher for opts.
func New(opts Options) (Hasher, error) {
	exclude, err := compile(opts.Exclude, "exclude")
	if err != nil {
		return Hasher{}, err
	}
	sets, err := compile(opts.Sets, "sets")
	if err != nil {
		return Hasher{}, err
	}
	norm := opts.normalised()
	return Hasher{alg: V2Prefix + norm.digest(), opts: norm, exclude: exclude, sets: sets}, nil
}

// Algorithm is the name stored in request_hash_alg beside every hash this hasher makes.
func (h Hasher) Algorithm() string { return h.alg }

// Options returns the options of a v2 hasher (none for v1).
func (h Hasher) Options() Options { return h.opts }

// Sum returns "sha256:<hex>" over Canonical(payload).
func (h Hasher) Sum(payload []byte) string {
	sum := sha256.Sum256(h.Canonical(payload))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Canonical returns the bytes Sum hashes. For v2: the v1 canonical form with the excluded members
// left out and the set arrays sorted, where only valid UTF-8 surrounded by JSON white space counts
// as JSON (docs/protocol.md).
func (h Hasher) Canonical(payload []byte) []byte {
	if h.alg == Algorithm {
		return Canonical(payload)
	}
	if len(h.exclude) == 0 && len(h.sets) == 0 {
		// The fast path accepts only what v2 accepts (valid UTF-8, JSON white space) and then
		// agrees with the reference, so it serves v2 without options too.
		if out, ok := canonicalFast(payload); ok {
			return out
		}
	}
	return canonicalV2(payload, h.exclude, h.sets)
}

// IsV2 reports whether alg names a v2 algorithm.
func IsV2(alg string) bool { return strings.HasPrefix(alg, V2Prefix) }

// Resolve returns the hasher of alg: v1, or the v2 algorithm of one of known. Any other name
// fails with ErrUnknownAlgorithm.
func Resolve(alg string, known ...Options) (Hasher, error) {
	if alg == Algorithm {
		return V1(), nil
	}
	if IsV2(alg) {
		for _, o := range known {
			if h, err := New(o); err == nil && h.alg == alg {
				return h, nil
			}
		}
	}
	return Hasher{}, fmt.Errorf("%w: %q", ErrUnknownAlgorithm, alg)
}
