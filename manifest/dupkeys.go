package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// checkDuplicateKeys refuses an object that names a key twice. encoding/json keeps the last value,
// so a key inserted before the sealed one ("writeForbidden": true, then the real false) leaves the
// digest intact while a reviewer reading the file sees a value replayctl does not use. data must
// be valid JSON (it is checked after decoding); keys are compared unescaped.
func checkDuplicateKeys(data []byte) error {
	type frame struct {
		object, expectKey bool
		keys              map[string]struct{}
	}
	var stack []frame
	for i := 0; i < len(data); {
		switch data[i] {
		case '{':
			stack = append(stack, frame{object: true, expectKey: true})
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			if top := &stack[len(stack)-1]; top.object {
				top.expectKey = true
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
				if _, dup := top.keys[key]; dup {
					return fmt.Errorf("%w: %s: key %q appears twice in one object; a reviewer would read one value and replayctl use the other; "+
						"re-run `replayctl plan` instead of editing the file", ErrMalformed, position(data, int64(i)), clip(key))
				}
				if top.keys == nil {
					top.keys = map[string]struct{}{}
				}
				top.keys[key] = struct{}{}
				top.expectKey = false
			}
			i = end
			continue
		}
		i++
	}
	return nil
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
