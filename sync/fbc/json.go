package fbc

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonParser decodes one JSON value with encoding/json's rules: the same
// grammar and nesting limit, strings unquoted as json.Unmarshal does
// (invalid UTF-8 and lone surrogates become U+FFFD) and numbers converted
// to float64 (out of range is an error).
type jsonParser struct {
	a     *arena
	src   []byte
	pos   int
	depth int
}

type jsonError struct {
	off int
	msg string
}

func (e *jsonError) Error() string { return fmt.Sprintf("offset %d: %s", e.off, e.msg) }

var errJSONEOF = errors.New("unexpected end of JSON input")

func (p *jsonParser) fail(msg string) error {
	if p.pos >= len(p.src) {
		return errJSONEOF
	}
	return &jsonError{p.pos, fmt.Sprintf("%s %q", msg, p.src[p.pos])}
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.src) && isJSONSpace(p.src[p.pos]) {
		p.pos++
	}
}

func (p *jsonParser) value() (node, error) {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return node{}, errJSONEOF
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.string()
		return node{kind: kStr, s: s}, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return node{kind: kTrue}, p.literal("true")
	case c == 'f':
		return node{kind: kFalse}, p.literal("false")
	case c == 'n':
		return node{kind: kNull}, p.literal("null")
	}
	return node{}, p.fail("invalid character looking for beginning of value:")
}

func (p *jsonParser) literal(lit string) error {
	for i := 0; i < len(lit); i++ {
		if p.pos >= len(p.src) {
			return errJSONEOF
		}
		if p.src[p.pos] != lit[i] {
			return p.fail("invalid character in literal " + lit + ":")
		}
		p.pos++
	}
	return nil
}

func (p *jsonParser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return errDepth
	}
	return nil
}

func (p *jsonParser) object() (node, error) {
	if err := p.enter(); err != nil {
		return node{}, err
	}
	p.pos++ // '{'
	m := p.a.mark()
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		p.depth--
		return p.a.endObj(m), nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.src) {
			return node{}, errJSONEOF
		}
		if p.src[p.pos] != '"' {
			return node{}, p.fail("invalid character looking for beginning of object key string:")
		}
		k, err := p.string()
		if err != nil {
			return node{}, err
		}
		p.skipSpace()
		if p.pos >= len(p.src) {
			return node{}, errJSONEOF
		}
		if p.src[p.pos] != ':' {
			return node{}, p.fail("invalid character after object key:")
		}
		p.pos++
		v, err := p.value()
		if err != nil {
			return node{}, err
		}
		p.a.push(node{kind: kStr, s: k})
		p.a.push(v)
		p.skipSpace()
		if p.pos >= len(p.src) {
			return node{}, errJSONEOF
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			p.depth--
			return p.a.endObj(m), nil
		default:
			return node{}, p.fail("invalid character after object key:value pair:")
		}
	}
}

func (p *jsonParser) array() (node, error) {
	if err := p.enter(); err != nil {
		return node{}, err
	}
	p.pos++ // '['
	m := p.a.mark()
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		p.depth--
		return p.a.endArr(m), nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return node{}, err
		}
		p.a.push(v)
		p.skipSpace()
		if p.pos >= len(p.src) {
			return node{}, errJSONEOF
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.depth--
			return p.a.endArr(m), nil
		default:
			return node{}, p.fail("invalid character after array element:")
		}
	}
}

func (p *jsonParser) number() (node, error) {
	start := p.pos
	src := p.src
	digits := func() int {
		n := 0
		for p.pos < len(src) && src[p.pos] >= '0' && src[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if src[p.pos] == '-' {
		p.pos++
	}
	if p.pos >= len(src) {
		return node{}, errJSONEOF
	}
	switch c := src[p.pos]; {
	case c == '0':
		p.pos++
	case c >= '1' && c <= '9':
		digits()
	default:
		return node{}, p.fail("invalid character in numeric literal:")
	}
	if p.pos < len(src) && src[p.pos] == '.' {
		p.pos++
		if p.pos >= len(src) {
			return node{}, errJSONEOF
		}
		if digits() == 0 {
			return node{}, p.fail("invalid character after decimal point in numeric literal:")
		}
	}
	if p.pos < len(src) && (src[p.pos] == 'e' || src[p.pos] == 'E') {
		p.pos++
		if p.pos < len(src) && (src[p.pos] == '+' || src[p.pos] == '-') {
			p.pos++
		}
		if p.pos >= len(src) {
			return node{}, errJSONEOF
		}
		if digits() == 0 {
			return node{}, p.fail("invalid character in exponent of numeric literal:")
		}
	}
	text := src[start:p.pos]
	var f float64
	if v, ok := smallInt(text); ok {
		f = float64(v)
	} else {
		var err error
		f, err = strconv.ParseFloat(string(text), 64)
		if err != nil {
			return node{}, fmt.Errorf("cannot unmarshal number %s into a float64", text)
		}
	}
	return node{kind: kNum, f: f}, nil
}

// smallInt parses short plain integers without strconv's float machinery.
func smallInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		if v == 0 {
			return 0, false // -0 must stay a negative zero
		}
		v = -v
	}
	return v, true
}

// string scans a quoted string starting at p.pos and returns its decoded
// bytes, referencing src when nothing needs rewriting.
func (p *jsonParser) string() ([]byte, error) {
	p.pos++ // opening quote
	start := p.pos
	src := p.src
	// Fast scan: plain ASCII without escapes.
	for p.pos < len(src) {
		c := src[p.pos]
		if c == '"' {
			s := src[start:p.pos]
			p.pos++
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		p.pos++
	}
	a := p.a
	out := len(a.strs)
	a.strs = append(a.strs, src[start:p.pos]...)
	for {
		if p.pos >= len(src) {
			return nil, errJSONEOF
		}
		c := src[p.pos]
		switch {
		case c == '"':
			p.pos++
			return a.strs[out:len(a.strs):len(a.strs)], nil
		case c < 0x20:
			return nil, p.fail("invalid character in string literal:")
		case c == '\\':
			if err := p.escape(); err != nil {
				return nil, err
			}
		case c < utf8.RuneSelf:
			a.strs = append(a.strs, c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(src[p.pos:])
			if r == utf8.RuneError && size == 1 {
				a.strs = append(a.strs, "\uFFFD"...)
			} else {
				a.strs = append(a.strs, src[p.pos:p.pos+size]...)
			}
			p.pos += size
		}
	}
}

// escape decodes the escape at p.pos (its backslash) into p.a.strs.
func (p *jsonParser) escape() error {
	src, a := p.src, p.a
	p.pos++
	if p.pos >= len(src) {
		return errJSONEOF
	}
	e := src[p.pos]
	p.pos++
	switch e {
	case '"', '\\', '/':
		a.strs = append(a.strs, e)
	case 'b':
		a.strs = append(a.strs, '\b')
	case 'f':
		a.strs = append(a.strs, '\f')
	case 'n':
		a.strs = append(a.strs, '\n')
	case 'r':
		a.strs = append(a.strs, '\r')
	case 't':
		a.strs = append(a.strs, '\t')
	case 'u':
		r, err := p.unicodeEscape()
		if err != nil {
			return err
		}
		a.strs = utf8.AppendRune(a.strs, r)
	default:
		p.pos--
		return p.fail("invalid character in string escape code:")
	}
	return nil
}

// unicodeEscape reads the four hex digits after \u, and the low half of a
// surrogate pair when one directly follows; an unpaired half is U+FFFD.
func (p *jsonParser) unicodeEscape() (rune, error) {
	src := p.src
	r, err := p.hex4()
	if err != nil || !utf16.IsSurrogate(r) {
		return r, err
	}
	if p.pos+1 >= len(src) || src[p.pos] != '\\' || src[p.pos+1] != 'u' {
		return utf8.RuneError, nil
	}
	save := p.pos
	p.pos += 2
	r2, err := p.hex4()
	if err != nil {
		return 0, err
	}
	if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
		return d, nil
	}
	p.pos = save
	return utf8.RuneError, nil
}

func (p *jsonParser) hex4() (rune, error) {
	var r rune
	for range 4 {
		if p.pos >= len(p.src) {
			return 0, errJSONEOF
		}
		c := p.src[p.pos]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, p.fail("invalid character in \\u hexadecimal character escape:")
		}
		r = r<<4 | rune(c)
		p.pos++
	}
	return r, nil
}
