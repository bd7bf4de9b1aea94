package shadow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
)

// Result paths join object keys with "." and write array elements as "[*]", so every element of an
// array shares one path ("lines[*].sku"). rootPath names a difference of the whole result.
const rootPath = "$"

var pathSyntax = regexp.MustCompile(`^(?:[^.\[\]\s]+|\[\*\])(?:\[\*\])*(?:\.[^.\[\]\s]+(?:\[\*\])*)*$`)

var errPathSyntax = errors.New(`not a result path: object keys joined by ".", "[*]" for array elements, as in "lines[*].sku"`)

func validatePath(p string) error {
	if !pathSyntax.MatchString(p) {
		return errPathSyntax
	}
	return nil
}

// difference is one path where two results differ, with the first differing pair of values (nil
// where a side does not have the path).
type difference struct {
	path string
	a, b json.RawMessage
}

// diffResults returns the paths where a and b differ, each once, sorted. Numbers are compared by
// value (1.0 equals 1); arrays of equal length element by element, arrays of different lengths as
// a whole.
func diffResults(a, b json.RawMessage) ([]difference, error) {
	va, err := decodeResult(a)
	if err != nil {
		return nil, err
	}
	vb, err := decodeResult(b)
	if err != nil {
		return nil, err
	}
	d := differ{seen: map[string]bool{}}
	d.walk("", va, vb, true, true)
	slices.SortFunc(d.out, func(x, y difference) int { return strings.Compare(x.path, y.path) })
	return d.out, nil
}

func decodeResult(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("result is not JSON: %w", err)
	}
	return v, nil
}

type differ struct {
	out  []difference
	seen map[string]bool
}

func (d *differ) walk(path string, a, b any, hasA, hasB bool) {
	if hasA && hasB {
		switch x := a.(type) {
		case map[string]any:
			if y, ok := b.(map[string]any); ok {
				for k, va := range x {
					vb, inB := y[k]
					d.walk(join(path, k), va, vb, true, inB)
				}
				for k, vb := range y {
					if _, inA := x[k]; !inA {
						d.walk(join(path, k), nil, vb, false, true)
					}
				}
				return
			}
		case []any:
			if y, ok := b.([]any); ok && len(x) == len(y) {
				for i := range x {
					d.walk(path+"[*]", x[i], y[i], true, true)
				}
				return
			}
		default:
			if scalarEqual(a, b) {
				return
			}
		}
	}
	d.record(path, a, b, hasA, hasB)
}

func (d *differ) record(path string, a, b any, hasA, hasB bool) {
	if path == "" {
		path = rootPath
	}
	if d.seen[path] {
		return
	}
	d.seen[path] = true
	diff := difference{path: path}
	if hasA {
		diff.a = mustMarshal(a)
	}
	if hasB {
		diff.b = mustMarshal(b)
	}
	d.out = append(d.out, diff)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func scalarEqual(a, b any) bool {
	if na, ok := a.(json.Number); ok {
		nb, ok := b.(json.Number)
		if !ok {
			return false
		}
		if na == nb {
			return true
		}
		ra, okA := new(big.Rat).SetString(string(na))
		rb, okB := new(big.Rat).SetString(string(nb))
		return okA && okB && ra.Cmp(rb) == 0
	}
	return a == b
}

// mustMarshal re-encodes a decoded JSON value, which cannot fail.
func mustMarshal(v any) json.RawMessage {
	out, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return out
}

// pathSet is a set of result paths, each covering itself and everything below it.
type pathSet map[string]bool

func newPathSet(paths ...[]string) pathSet {
	s := pathSet{}
	for _, ps := range paths {
		for _, p := range ps {
			s[p] = true
		}
	}
	return s
}

// covers reports whether p is in the set or below a path in it.
func (s pathSet) covers(p string) bool {
	for {
		if s[p] {
			return true
		}
		i := strings.LastIndexAny(p, ".[")
		if i <= 0 {
			return false
		}
		p = p[:i]
	}
}

// classified is a comparison's differences split by why they count or not; an explicit
// --ignore-field wins over noise.
type classified struct {
	changed []FieldChange
	noise   []string
	ignored []string
}

func classify(diffs []difference, ignore, noise pathSet) classified {
	var c classified
	for _, d := range diffs {
		switch {
		case ignore.covers(d.path):
			c.ignored = append(c.ignored, d.path)
		case noise.covers(d.path):
			c.noise = append(c.noise, d.path)
		default:
			c.changed = append(c.changed, FieldChange{Path: d.path, Original: d.a, Shadow: d.b})
		}
	}
	return c
}
