package gqlshape

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/catalogsync/catalogsync/internal/asciiscan"
)

// observeFast is Observe without decoding: one pass over the line that
// looks at keys and the first byte of values, and splits only arrays and
// the objects in them. It reports false, having changed nothing, for
// anything it does not handle exactly as the decoding path would (invalid
// JSON, a duplicate key, two keys of one object with one GraphQL name),
// and Observe then decodes the line.
func (s *Shape) observeFast(sc *Schema, line []byte) bool {
	p := scanner{b: line}
	type top struct {
		key, name string
		typ       string
		list      bool
		nested    map[string]*Field
	}
	var fields []top
	ok := p.object(func(key string) bool {
		name := s.fieldName(key)
		for _, f := range fields {
			if f.key == key || f.name == name {
				return false
			}
		}
		typ, list, nested, ok := p.topValue(s)
		fields = append(fields, top{key, name, typ, list, nested})
		return ok
	})
	if !ok || !p.end() {
		return false
	}
	sc.Objects++
	for _, t := range fields {
		f, ok := sc.Fields[t.name]
		switch {
		case !ok:
			sc.Fields[t.name] = &Field{Key: t.key, Type: t.typ, List: t.list, Nested: t.nested}
		case t.nested == nil:
		case f.Nested == nil:
			f.Nested = t.nested
		default:
			mergeFields(f.Nested, t.nested)
		}
	}
	return true
}

// fieldName is FieldName, remembered for the keys a catalog repeats.
func (s *Shape) fieldName(key string) string {
	if n, ok := s.names[key]; ok {
		return n
	}
	n := FieldName(key)
	if s.names == nil {
		s.names = map[string]string{}
	}
	if len(s.names) < 4096 {
		s.names[key] = n
	}
	return n
}

// topValue types a top-level value as analyzeTop does.
func (p *scanner) topValue(s *Shape) (typ string, list bool, nested map[string]*Field, ok bool) {
	if p.peek() != '[' {
		t, ok := p.scalar()
		return t, false, nil, ok
	}
	p.i++
	var firstKind byte
	var firstType string
	mixed := false
	n := 0
	ok = p.elements(func() bool {
		n++
		if n > maxSample {
			return p.skip()
		}
		k := p.peek()
		if k == 'n' {
			return p.skip()
		}
		kk := kindOf(k)
		if firstKind == 0 {
			firstKind = kk
		} else if kk != firstKind {
			mixed = true
		}
		if k != '{' {
			t, ok := p.scalar()
			if firstType == "" {
				firstType = t
			}
			return ok
		}
		if firstType == "" {
			firstType = String
		}
		fs, ok := p.nestedObject(s)
		if nested == nil {
			nested = fs
		} else {
			mergeFields(nested, fs)
		}
		return ok
	})
	if firstKind == 0 || mixed && nested == nil {
		return String, true, nil, ok
	}
	return firstType, true, nested, ok
}

// nestedObject types an object inside an array as analyzeObject does.
func (p *scanner) nestedObject(s *Shape) (map[string]*Field, bool) {
	fs := map[string]*Field{}
	var keys []string
	ok := p.object(func(key string) bool {
		name := s.fieldName(key)
		if _, dup := fs[name]; dup {
			return false
		}
		for _, k := range keys {
			if k == key {
				return false
			}
		}
		keys = append(keys, key)
		f := &Field{Key: key}
		fs[name] = f
		if p.peek() != '[' {
			t, ok := p.scalar()
			f.Type = t
			return ok
		}
		p.i++
		f.List, f.Type = true, String
		first := true
		return p.elements(func() bool {
			if !first {
				return p.skip()
			}
			first = false
			t, ok := p.scalar()
			f.Type = t
			return ok
		})
	})
	return fs, ok
}

// kindOf groups a value's first byte by JSON kind.
func kindOf(c byte) byte {
	switch c {
	case '"', '{', '[', 't', 'n':
		return c
	case 'f':
		return 't'
	}
	return '0'
}

// scanner walks JSON text.
type scanner struct {
	b []byte
	i int
}

func (p *scanner) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *scanner) peek() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *scanner) end() bool { p.ws(); return p.i == len(p.b) }

// object walks an object, calling member with each key positioned at its
// value; member must consume the value.
func (p *scanner) object(member func(key string) bool) bool {
	if p.peek() != '{' {
		return false
	}
	p.i++
	if p.peek() == '}' {
		p.i++
		return true
	}
	for {
		key, ok := p.key()
		if !ok || p.peek() != ':' {
			return false
		}
		p.i++
		if !member(key) {
			return false
		}
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			return true
		default:
			return false
		}
	}
}

// elements walks an array whose "[" was consumed, calling elem at each
// element; elem must consume it.
func (p *scanner) elements(elem func() bool) bool {
	if p.peek() == ']' {
		p.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch p.peek() {
		case ',':
			p.i++
		case ']':
			p.i++
			return true
		default:
			return false
		}
	}
}

// key reads a string, unescaped.
func (p *scanner) key() (string, bool) {
	start := p.i
	esc, ok := p.str()
	if !ok {
		return "", false
	}
	raw := p.b[start+1 : p.i-1]
	if !esc && ascii(raw) {
		return string(raw), true
	}
	var k string
	if json.Unmarshal(p.b[start:p.i], &k) != nil {
		return "", false
	}
	return k, true
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// str skips a string, checking its escapes, and says whether it had any.
func (p *scanner) str() (esc, ok bool) {
	if p.peek() != '"' {
		return false, false
	}
	for p.i++; p.i < len(p.b); p.i++ {
		p.i += asciiscan.JSONString(p.b[p.i:])
		if p.i == len(p.b) {
			break
		}
		switch c := p.b[p.i]; {
		case c == '\\':
			esc = true
			p.i++
			if p.i >= len(p.b) {
				return false, false
			}
			switch p.b[p.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(p.b)-p.i < 5 || !hex4(p.b[p.i+1:p.i+5]) {
					return false, false
				}
				p.i += 4
			default:
				return false, false
			}
		case c == '"':
			p.i++
			return esc, true
		case c < 0x20:
			return false, false
		}
	}
	return false, false
}

// scalar consumes any value and returns catalogd's type of it.
func (p *scanner) scalar() (string, bool) {
	switch c := p.peek(); {
	case c == 't' || c == 'f':
		return Boolean, p.skip()
	case c == '-' || '0' <= c && c <= '9':
		start := p.i
		if !p.skip() {
			return "", false
		}
		x, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
		if err != nil {
			return "", false
		}
		if !math.IsNaN(x) && x == float64(int64(x)) {
			return Int, true
		}
		return Float, true
	}
	return String, p.skip()
}

// skip consumes one value of any kind, checking its syntax.
func (p *scanner) skip() bool {
	switch c := p.peek(); {
	case c == '"':
		_, ok := p.str()
		return ok
	case c == '{':
		return p.object(func(string) bool { return p.skip() })
	case c == '[':
		p.i++
		return p.elements(p.skip)
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	}
	return false
}

func hex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func (p *scanner) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// number consumes a number with JSON's grammar.
func (p *scanner) number() bool {
	b, i := p.b, p.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	// Decoding fails on numbers out of float64's range; so must we.
	if _, err := strconv.ParseFloat(string(b[p.i:i]), 64); err != nil {
		return false
	}
	p.i = i
	return true
}
