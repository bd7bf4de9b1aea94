package fingerprint

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// canonicalV2 is the v2 canonical form: a payload that is valid UTF-8 and exactly one JSON value
// between JSON white space is decoded as the v1 reference decodes it, its excluded members are
// removed and its set arrays sorted by their elements' canonical bytes, then it is encoded as v1
// encodes. Anything else is hashed as its raw bytes.
func canonicalV2(payload []byte, exclude, sets []pattern) []byte {
	if !utf8.Valid(payload) {
		return payload
	}
	v, rest, ok := decodeFirst(payload)
	if !ok || len(bytes.Trim(rest, jsonSpace)) > 0 {
		return payload
	}
	if len(exclude) > 0 || len(sets) > 0 {
		v = normalise(v, nil, exclude, sets)
	}
	out, err := encodeCanonical(v)
	if err != nil {
		return payload
	}
	return out
}

// jsonSpace is the white space RFC 8259 allows between tokens.
const jsonSpace = " \t\n\r"

// normalise applies the options to v found at path (the object keys leading to it; arrays add
// none). Elements are normalised before a set is sorted, so nested rules apply inside them.
func normalise(v any, path []string, exclude, sets []pattern) any {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			childPath := append(path[:len(path):len(path)], k)
			if matchesAny(exclude, childPath) {
				delete(t, k)
				continue
			}
			t[k] = normalise(child, childPath, exclude, sets)
		}
		return t
	case []any:
		for i, el := range t {
			t[i] = normalise(el, path, exclude, sets)
		}
		if len(path) > 0 && matchesAny(sets, path) {
			return sortedSet(t)
		}
		return t
	default:
		return v
	}
}

// sortedSet orders the elements by their canonical bytes; equal elements are all kept.
func sortedSet(elems []any) []any {
	encoded := make([]json.RawMessage, len(elems))
	for i, el := range elems {
		b, err := encodeCanonical(el)
		if err != nil {
			return elems
		}
		encoded[i] = b
	}
	slices.SortFunc(encoded, func(a, b json.RawMessage) int { return bytes.Compare(a, b) })
	out := make([]any, len(encoded))
	for i, b := range encoded {
		out[i] = b
	}
	return out
}

// decodeFirst decodes the first JSON value of payload with numbers kept as written, and returns
// what follows it.
func decodeFirst(payload []byte) (v any, rest []byte, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, nil, false
	}
	return v, payload[dec.InputOffset():], true
}

// encodeCanonical encodes as encoding/json does (keys sorted, no HTML escaping), without the
// trailing newline.
func encodeCanonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
