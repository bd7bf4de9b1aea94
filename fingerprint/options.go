package fingerprint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Options say which parts of a payload do not belong to the business intent a fingerprint binds:
// members that change between sends of one intent (a send time, trace context) and arrays whose
// order carries no meaning. Both hold path patterns: object keys joined by ".", where "*" stands
// for any one key; arrays are transparent, so "lines.sentAt" names the sentAt member of every
// element of lines. docs/protocol.md defines them precisely.
type Options struct {
	// Exclude lists the members left out of the fingerprint, e.g. "sentAt" or "trace.*".
	Exclude []string `json:"exclude"`
	// Sets lists the arrays whose elements are sorted before hashing, e.g. "tags".
	Sets []string `json:"sets"`
}

// ErrBadOptions means a path pattern of Options cannot be used.
var ErrBadOptions = fmt.Errorf("bad fingerprint options")

// pattern is a compiled path pattern: one entry per key, "*" for any key.
type pattern []string

func (p pattern) matches(path []string) bool {
	if len(p) != len(path) {
		return false
	}
	for i, seg := range p {
		if seg != "*" && seg != path[i] {
			return false
		}
	}
	return true
}

func matchesAny(patterns []pattern, path []string) bool {
	for _, p := range patterns {
		if p.matches(path) {
			return true
		}
	}
	return false
}

// normalised returns o with each list sorted by byte order and without repeats: the form the
// options digest is taken over, so that listing the same patterns differently names the same
// algorithm.
func (o Options) normalised() Options {
	norm := func(in []string) []string {
		out := slices.Clone(in)
		slices.Sort(out)
		return slices.Compact(out)
	}
	return Options{Exclude: orEmpty(norm(o.Exclude)), Sets: orEmpty(norm(o.Sets))}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Encode returns the canonical encoding of o: {"exclude":[...],"sets":[...]} with each list
// sorted by byte order, repeats removed, no white space and strings escaped as in the canonical
// payload. The algorithm name carries the first 8 hex digits of its SHA-256, and the ledger
// stores it so that a planner or another instance can compute the same fingerprints.
func (o Options) Encode() string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(o.normalised()) // two string slices always encode
	return strings.TrimSuffix(buf.String(), "\n")
}

// ParseOptions reads options in the form Encode writes (the ledger's stored form).
func ParseOptions(encoded string) (Options, error) {
	dec := json.NewDecoder(strings.NewReader(encoded))
	dec.DisallowUnknownFields()
	var o Options
	if err := dec.Decode(&o); err != nil {
		return Options{}, fmt.Errorf("%w: read stored options %q: %v", ErrBadOptions, encoded, err)
	}
	return o, nil
}

func (o Options) digest() string {
	sum := sha256.Sum256([]byte(o.Encode()))
	return hex.EncodeToString(sum[:])[:8]
}

func compile(list []string, field string) ([]pattern, error) {
	out := make([]pattern, 0, len(list))
	for _, s := range list {
		p := pattern(strings.Split(s, "."))
		if slices.Contains(p, "") {
			return nil, fmt.Errorf("%w: %s pattern %q has an empty key: write keys joined by single dots, e.g. \"trace.*\"", ErrBadOptions, field, s)
		}
		out = append(out, p)
	}
	return out, nil
}
