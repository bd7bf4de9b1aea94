package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/replayctl/replayctl/internal/clip"
)

// checkKeys refuses every object key that is not exactly a field of the manifest type at its place,
// and every object that names a key twice. encoding/json matches field names case-insensitively
// (Unicode folding included: "reaſon" is reason) and keeps the last value, so "WriteForbidden":
// true beside "writeForbidden": false, or a second "EventIds" list, would leave the digest intact
// while a reviewer reading the file sees a value replayctl does not use. Keys are compared
// unescaped and byte for byte. data must start with one valid JSON value (it is checked after
// decoding); the scan stops at its end.
func checkKeys(data []byte) error {
	type frame struct {
		object, expectKey bool
		// shape is what the container holds; nil where the type gives no shape to check.
		shape *keyShape
		keys  map[string]struct{}
		// key is the object's current key, index the array's current element, for the path.
		key   string
		index int
	}
	var stack []frame
	// childShape is the shape of the value that starts next, given where the scan stands.
	childShape := func() *keyShape {
		if len(stack) == 0 {
			return manifestShape()
		}
		top := &stack[len(stack)-1]
		switch {
		case top.shape == nil:
			return nil
		case top.object && top.shape.fields != nil:
			return top.shape.fields[top.key]
		default:
			return top.shape.elem
		}
	}
	path := func() string {
		var b strings.Builder
		b.WriteString("$")
		for _, f := range stack[:len(stack)-1] {
			if f.object {
				b.WriteString("." + f.key)
			} else {
				b.WriteString("[" + strconv.Itoa(f.index) + "]")
			}
		}
		return b.String()
	}
	for i := 0; i < len(data); {
		switch data[i] {
		case '{':
			stack = append(stack, frame{object: true, expectKey: true, shape: childShape()})
		case '[':
			stack = append(stack, frame{shape: childShape()})
		case '}', ']':
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return nil
			}
		case ',':
			if top := &stack[len(stack)-1]; top.object {
				top.expectKey = true
			} else {
				top.index++
			}
		case '"':
			end := stringEnd(data, i)
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
				top := &stack[n-1]
				raw := data[i:end]
				key := string(raw[1 : len(raw)-1])
				if bytes.IndexByte(raw, '\\') >= 0 {
					_ = json.Unmarshal(raw, &key)
				}
				if top.shape != nil && top.shape.fields != nil {
					if _, known := top.shape.fields[key]; !known {
						return unknownKey(data, i, path(), key, top.shape)
					}
				}
				if _, dup := top.keys[key]; dup {
					return fmt.Errorf("%w: %s: key %q appears twice in one object; a reviewer would read one value and replayctl use the other; "+
						"re-run `replayctl plan` instead of editing the file", ErrMalformed, position(data, int64(i)), clip.Bytes(key, maxQuoted))
				}
				if top.keys == nil {
					top.keys = map[string]struct{}{}
				}
				top.keys[key] = struct{}{}
				top.key = key
				top.expectKey = false
			}
			i = end
			continue
		}
		i++
	}
	return nil
}

// unknownKey reports key, found at data[offset] in the object at path, which has no such field.
func unknownKey(data []byte, offset int, path, key string, shape *keyShape) error {
	hint := ""
	for name := range shape.fields {
		if strings.EqualFold(name, key) {
			hint = fmt.Sprintf("; field names are exact and case-sensitive: the field is %q", name)
		}
	}
	if renamed, ok := renamedFields[key]; ok && path == "$" {
		hint = fmt.Sprintf("; the file was written by a replayctl from before the JSON contract renamed it to %q (docs/contract.md)", renamed)
	}
	return fmt.Errorf("%w: %s: unknown field %q in %s: %s has no such field%s; re-run `replayctl plan` instead of editing the file",
		ErrMalformed, position(data, int64(offset)), clip.Bytes(key, maxQuoted), path, APIVersion, hint)
}

// renamedFields are the top-level names a manifest had before the JSON contract (docs/contract.md,
// "JSON outputs"), and what they are called now: a file planned by an older build is told so.
var renamedFields = map[string]string{"id": "jobId", "digest": "manifestDigest"}

// keyShape is what a JSON value of the manifest may hold: an object with exactly fields, or an
// array or a map (any keys) of elem. A scalar has neither.
type keyShape struct {
	fields map[string]*keyShape
	elem   *keyShape
}

// manifestShape is the shape of a Manifest, read once from its json tags.
var manifestShape = sync.OnceValue(func() *keyShape { return shapeOf(reflect.TypeFor[Manifest]()) })

func shapeOf(t reflect.Type) *keyShape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[time.Time]():
		return &keyShape{}
	case t.Kind() == reflect.Struct:
		s := &keyShape{fields: map[string]*keyShape{}}
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			s.fields[name] = shapeOf(f.Type)
		}
		return s
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map:
		return &keyShape{elem: shapeOf(t.Elem())}
	}
	return &keyShape{}
}

// stringEnd returns the index just past the JSON string that starts with the quote at data[start].
func stringEnd(data []byte, start int) int {
	j := start + 1
	for {
		k := bytes.IndexAny(data[j:], `"\`)
		if k < 0 {
			return len(data)
		}
		if data[j+k] == '\\' {
			j += k + 2
			continue
		}
		return j + k + 1
	}
}
