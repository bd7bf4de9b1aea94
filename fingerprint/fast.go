package fingerprint

import (
	"bytes"
	"slices"
	"unicode/utf8"
)

// maxFastDepth bounds the fast path's recursion; deeper documents take the reference path, which
// has its own limit.
const maxFastDepth = 200

// canonicalFast produces the canonical form without building a generic value, for the common
// payload: no escapes in strings, no duplicate keys. It reports false for anything else (including
// invalid JSON), and the caller falls back to the reference encoder, so both paths always agree.
func canonicalFast(in []byte) ([]byte, bool) {
	c := canonicalizer{in: in, out: make([]byte, 0, len(in))}
	if !c.value(0) {
		return nil, false
	}
	c.space()
	return c.out, c.pos == len(c.in)
}

type canonicalizer struct {
	in  []byte
	pos int
	out []byte
}

type member struct {
	key        []byte
	start, end int
}

func (c *canonicalizer) space() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canonicalizer) value(depth int) bool {
	if depth > maxFastDepth {
		return false
	}
	c.space()
	if c.pos >= len(c.in) {
		return false
	}
	switch c.in[c.pos] {
	case '{':
		return c.object(depth)
	case '[':
		return c.array(depth)
	case '"':
		s, ok := c.str()
		if ok {
			c.out = append(append(append(c.out, '"'), s...), '"')
		}
		return ok
	case 't':
		return c.literal("true")
	case 'f':
		return c.literal("false")
	case 'n':
		return c.literal("null")
	default:
		return c.number()
	}
}

// object writes the members as they come and reorders them only when their keys are not already
// sorted, which is the common case for payloads encoded from Go structs or sorted maps.
func (c *canonicalizer) object(depth int) bool {
	c.pos++
	c.out = append(c.out, '{')
	base := len(c.out)
	// On the stack for the usual small object: grown from nil, the members of a four-field
	// order took three allocations, paid on every message checked or fingerprinted.
	var small [8]member
	members := small[:0]
	c.space()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '}')
		return true
	}
	for {
		c.space()
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return false
		}
		key, ok := c.str()
		if !ok {
			return false
		}
		c.space()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return false
		}
		c.pos++
		if len(members) > 0 {
			c.out = append(c.out, ',')
		}
		start := len(c.out)
		c.out = append(append(append(c.out, '"'), key...), '"', ':')
		if !c.value(depth + 1) {
			return false
		}
		members = append(members, member{key: key, start: start - base, end: len(c.out) - base})
		more, ok := c.separator('}')
		if !ok {
			return false
		}
		if !more {
			break
		}
	}
	byKey := func(a, b member) int { return bytes.Compare(a.key, b.key) }
	if !slices.IsSortedFunc(members, byKey) {
		slices.SortFunc(members, byKey)
		var smallWritten [512]byte
		written := append(smallWritten[:0], c.out[base:]...)
		c.out = c.out[:base]
		for i, m := range members {
			if i > 0 {
				c.out = append(c.out, ',')
			}
			c.out = append(c.out, written[m.start:m.end]...)
		}
	}
	for i := 1; i < len(members); i++ {
		if bytes.Equal(members[i-1].key, members[i].key) {
			return false // the reference keeps the last duplicate; let it decide
		}
	}
	c.out = append(c.out, '}')
	return true
}

func (c *canonicalizer) array(depth int) bool {
	c.pos++
	c.out = append(c.out, '[')
	c.space()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		return true
	}
	for first := true; ; first = false {
		if !first {
			c.out = append(c.out, ',')
		}
		if !c.value(depth + 1) {
			return false
		}
		more, ok := c.separator(']')
		if !ok {
			return false
		}
		if !more {
			c.out = append(c.out, ']')
			return true
		}
	}
}

// separator consumes what follows a member or element: a comma (more follow) or the closing
// bracket (done); anything else is not JSON.
func (c *canonicalizer) separator(closing byte) (more, ok bool) {
	c.space()
	if c.pos >= len(c.in) {
		return false, false
	}
	switch c.in[c.pos] {
	case ',':
		c.pos++
		return true, true
	case closing:
		c.pos++
		return false, true
	}
	return false, false
}

// str reads a string whose canonical form is its raw content: no escapes, valid UTF-8, and none of
// the characters the reference encoder escapes (U+2028, U+2029).
func (c *canonicalizer) str() ([]byte, bool) {
	c.pos++
	start := c.pos
	for c.pos < len(c.in) {
		b := c.in[c.pos]
		switch {
		case b == '"':
			s := c.in[start:c.pos]
			c.pos++
			return s, true
		case b == '\\' || b < 0x20:
			return nil, false
		case b < utf8.RuneSelf:
			c.pos++
		default:
			r, size := utf8.DecodeRune(c.in[c.pos:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return nil, false
			}
			c.pos += size
		}
	}
	return nil, false
}

func (c *canonicalizer) literal(lit string) bool {
	if !bytes.HasPrefix(c.in[c.pos:], []byte(lit)) {
		return false
	}
	c.pos += len(lit)
	c.out = append(c.out, lit...)
	return true
}

// number copies a number as written after checking it against JSON's grammar.
func (c *canonicalizer) number() bool {
	start := c.pos
	digits := func() int {
		n := 0
		for c.pos < len(c.in) && c.in[c.pos] >= '0' && c.in[c.pos] <= '9' {
			c.pos++
			n++
		}
		return n
	}
	if c.pos < len(c.in) && c.in[c.pos] == '-' {
		c.pos++
	}
	if c.pos < len(c.in) && c.in[c.pos] == '0' {
		c.pos++
	} else if digits() == 0 {
		return false
	}
	if c.pos < len(c.in) && c.in[c.pos] == '.' {
		c.pos++
		if digits() == 0 {
			return false
		}
	}
	if c.pos < len(c.in) && (c.in[c.pos] == 'e' || c.in[c.pos] == 'E') {
		c.pos++
		if c.pos < len(c.in) && (c.in[c.pos] == '+' || c.in[c.pos] == '-') {
			c.pos++
		}
		if digits() == 0 {
			return false
		}
	}
	c.out = append(c.out, c.in[start:c.pos]...)
	return true
}
