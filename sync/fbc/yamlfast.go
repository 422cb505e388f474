package fbc

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/catalogsync/catalogsync/internal/asciiscan"
)

// fastYAML parses the YAML that catalogs are made of (block mappings and
// sequences, plain, quoted and block scalars, empty flow collections,
// comments) straight into the arena. Anything else — anchors, tags, flow
// collections, complex keys, tabs, unusual characters, or input it cannot
// prove valid — makes it give up, and the document goes through yaml.v2
// instead. It mirrors libyaml's scanner rules (as vendored by yaml.v2) for
// what it accepts; the differential tests and FuzzParse hold it to that.
type fastYAML struct {
	src   []byte
	pos   int // start of the current line
	a     *arena
	depth int
}

// bailOut is panicked to abandon the fast path; parse recovers it.
type bailOut struct{}

func bail() { panic(bailOut{}) }

const maxFastDepth = 100

func (f *fastYAML) parse(a *arena, doc []byte) (root node, ok bool) {
	if len(doc) == 0 || doc[len(doc)-1] != '\n' || !plainChars(doc) {
		return node{}, false
	}
	defer func() {
		if r := recover(); r != nil {
			if _, isBail := r.(bailOut); !isBail {
				panic(r)
			}
			ok = false
		}
		f.src = nil
	}()
	*f = fastYAML{src: doc, a: a}
	if bytes.HasPrefix(doc, []byte("---")) {
		// A document start marker may open the document (the splitter
		// keeps it): "---", optionally followed by spaces and a comment.
		i := 3
		for doc[i] == ' ' {
			i++
		}
		if doc[i] != '\n' && (doc[i] != '#' || i == 3) {
			return node{}, false
		}
		f.pos = lineEnd(doc, i) + 1
	}
	if f.nextContent() != 0 {
		return node{}, false
	}
	root = f.mapping(0, -1)
	if f.nextContent() != -1 {
		return node{}, false
	}
	return root, true
}

// plainChars reports whether doc holds only characters the fast path
// handles: printable ASCII, '\n', and valid UTF-8 that libyaml reads as
// ordinary characters (not BOM, NEL, LS or PS).
func plainChars(doc []byte) bool {
	for i := 0; i < len(doc); {
		i += asciiscan.PrintableLines(doc[i:])
		if i == len(doc) {
			break
		}
		if doc[i] < utf8.RuneSelf {
			return false
		}
		r, size := utf8.DecodeRune(doc[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return false
		case r < 0xA0, r == 0x2028, r == 0x2029, r == 0xFEFF, r >= 0xD800 && r < 0xE000, r == 0xFFFE, r == 0xFFFF:
			return false
		}
		i += size
	}
	return true
}

func lineEnd(src []byte, p int) int { return p + bytes.IndexByte(src[p:], '\n') }

// nextContent moves f.pos past blank and comment lines and returns the
// indentation of the next line, or -1 at the end of the document.
func (f *fastYAML) nextContent() int {
	src := f.src
	for f.pos < len(src) {
		i := f.pos
		for src[i] == ' ' {
			i++
		}
		switch c := src[i]; {
		case c == '\n', c == '#':
			f.pos = lineEnd(src, i) + 1
			continue
		case i == f.pos && (c == '%' || bytes.HasPrefix(src[i:], []byte("..."))):
			bail() // directive or document end marker
		}
		return i - f.pos
	}
	return -1
}

func (f *fastYAML) enter() {
	f.depth++
	if f.depth > maxFastDepth {
		bail()
	}
}

func isDash(src []byte, p int) bool {
	return src[p] == '-' && (src[p+1] == ' ' || src[p+1] == '\n')
}

// mapping parses a block mapping whose keys sit at column col. When inline
// is >= 0 the first key starts there, on the current line ("- key: v").
func (f *fastYAML) mapping(col, inline int) node {
	f.enter()
	src, a := f.src, f.a
	m := a.mark()
	for first := true; ; first = false {
		p := inline
		if !first || inline < 0 {
			ind := f.nextContent()
			if ind < col {
				break
			}
			if ind > col {
				bail()
			}
			p = f.pos + ind
		}
		if isDash(src, p) {
			bail()
		}
		key, after := f.key(p)
		q := after
		for src[q] == ' ' {
			q++
		}
		var v node
		if src[q] == '\n' || src[q] == '#' && q > after {
			f.pos = lineEnd(src, q) + 1
			switch ind := f.nextContent(); {
			case ind > col:
				v = f.block(ind, col)
			case ind == col && isDash(src, f.pos+ind):
				v = f.sequence(col)
			default:
				v = node{kind: kNull}
			}
		} else {
			v = f.inlineValue(q, col)
		}
		a.push(key)
		a.push(v)
	}
	f.depth--
	return a.endObj(m)
}

// block parses the node that starts on the current line at column ind,
// nested under a collection at column parent.
func (f *fastYAML) block(ind, parent int) node {
	p := f.pos + ind
	if isDash(f.src, p) {
		return f.sequence(ind)
	}
	if f.looksLikeKey(p) {
		return f.mapping(ind, -1)
	}
	bail() // a scalar on its own line
	return node{}
}

// sequence parses a block sequence whose dashes sit at column col.
func (f *fastYAML) sequence(col int) node {
	f.enter()
	src, a := f.src, f.a
	m := a.mark()
	for {
		ind := f.nextContent()
		if ind < col {
			break
		}
		if ind > col {
			bail()
		}
		p := f.pos + col
		if !isDash(src, p) {
			break // the parent mapping goes on (or rejects the line)
		}
		q := p + 1
		for src[q] == ' ' {
			q++
		}
		var v node
		switch {
		case src[q] == '\n' || src[q] == '#' && q > p+1:
			f.pos = lineEnd(src, q) + 1
			if ind := f.nextContent(); ind > col {
				v = f.block(ind, col)
			} else {
				v = node{kind: kNull}
			}
		case isDash(src, q):
			bail()
		case f.looksLikeKey(q):
			v = f.mapping(q-f.pos, q)
		default:
			v = f.inlineValue(q, col)
		}
		a.push(v)
	}
	f.depth--
	return a.endArr(m)
}

// indicators cannot start a plain scalar ('-', '?' and ':' may when a
// non-space follows; only '-' is accepted here).
var indicator = [256]bool{
	'-': true, '?': true, ':': true, ',': true, '[': true, ']': true, '{': true, '}': true,
	'#': true, '&': true, '*': true, '!': true, '|': true, '>': true, '\'': true, '"': true,
	'%': true, '@': true, '`': true,
}

func plainStart(src []byte, p int) bool {
	c := src[p]
	if c == '-' {
		return src[p+1] != ' ' && src[p+1] != '\n'
	}
	return !indicator[c]
}

// plainColon returns the offset of the first ": " or ":\n" on the line from
// p, stopping at a comment (" #"); -1 when there is none.
func plainColon(src []byte, p int) int {
	for i := p; ; i++ {
		i = lineStop(src, i)
		switch src[i] {
		case '\n':
			return -1
		case ':':
			if src[i+1] == ' ' || src[i+1] == '\n' {
				return i
			}
		case '#':
			if i > p && src[i-1] == ' ' {
				return -1
			}
		}
	}
}

// lineStop returns the offset of the first '\n', ':' or '#' from p.
func lineStop(src []byte, p int) int {
	j := asciiscan.IndexAny3(src[p:], '\n', ':', '#')
	if j < 0 {
		bail() // parse takes only documents ending in '\n'
	}
	return p + j
}

// looksLikeKey reports whether the content at p is an implicit mapping key.
func (f *fastYAML) looksLikeKey(p int) bool {
	src := f.src
	switch c := src[p]; {
	case c == '"' || c == '\'':
		end, ok := quotedEndOnLine(src, p)
		if !ok {
			return false
		}
		for src[end] == ' ' {
			end++
		}
		return src[end] == ':' && (src[end+1] == ' ' || src[end+1] == '\n')
	case plainStart(src, p):
		return plainColon(src, p) >= 0
	}
	return false
}

// quotedEndOnLine finds the closing quote of the quoted scalar at p when it
// ends on the same line, returning the offset just past it.
func quotedEndOnLine(src []byte, p int) (int, bool) {
	q := src[p]
	for i := p + 1; src[i] != '\n'; i++ {
		switch {
		case q == '"' && src[i] == '\\':
			i++
			if src[i] == '\n' {
				return 0, false
			}
		case src[i] == q:
			if q == '\'' && src[i+1] == '\'' {
				i++
				continue
			}
			return i + 1, true
		}
	}
	return 0, false
}

// key parses the implicit key at p and returns it and the offset after its
// ':'. Keys must be single-line strings; YAML keys that resolve to other
// types (true, 1, null, the merge key <<) are left to yaml.v2.
func (f *fastYAML) key(p int) (node, int) {
	src := f.src
	switch c := src[p]; {
	case c == '"' || c == '\'':
		end, ok := quotedEndOnLine(src, p)
		if !ok {
			bail()
		}
		var s []byte
		if c == '"' {
			s, _ = f.doubleQuoted(p, -1)
		} else {
			s, _ = f.singleQuoted(p, -1)
		}
		for src[end] == ' ' {
			end++
		}
		if src[end] != ':' || src[end+1] != ' ' && src[end+1] != '\n' {
			bail()
		}
		return f.a.str(s), end + 1
	case plainStart(src, p):
		colon := plainColon(src, p)
		if colon < 0 || colon-p > 1000 {
			bail() // no key here, or longer than libyaml's simple key limit
		}
		e := colon
		for src[e-1] == ' ' {
			e--
		}
		s := src[p:e]
		if n := resolvePlain(s); n.kind != kStr || string(s) == "<<" {
			bail()
		}
		return node{kind: kStr, s: s}, colon + 1
	}
	bail()
	return node{}, 0
}

// inlineValue parses the scalar (or empty flow collection) starting at q on
// the current line, the value of a collection at column parent, and leaves
// f.pos at the start of the next unread line.
func (f *fastYAML) inlineValue(q, parent int) node {
	src := f.src
	var v node
	switch c := src[q]; c {
	case '"', '\'':
		var s []byte
		var end int
		if c == '"' {
			s, end = f.doubleQuoted(q, parent)
		} else {
			s, end = f.singleQuoted(q, parent)
		}
		f.endOfLine(end)
		return node{kind: kStr, s: s}
	case '|', '>':
		return f.blockScalar(q, parent)
	case '{', '[':
		if src[q+1] != c+2 { // "{}" or "[]" only
			bail()
		}
		f.endOfLine(q + 2)
		if c == '{' {
			v = node{kind: kObj}
		} else {
			v = node{kind: kArr}
		}
		return v
	}
	if !plainStart(src, q) {
		bail()
	}
	return resolvePlain(f.plain(q, parent))
}

// endOfLine accepts only spaces and a comment after a value ending at p.
func (f *fastYAML) endOfLine(p int) {
	src := f.src
	i := p
	for src[i] == ' ' {
		i++
	}
	if src[i] != '\n' && (src[i] != '#' || i == p) {
		bail()
	}
	f.pos = lineEnd(src, i) + 1
}

// plainLine returns the plain scalar text on one line from p (trailing
// spaces trimmed) and whether a comment ended it.
func plainLine(src []byte, p int) (text []byte, comment bool, next int) {
	i := p
	for ; ; i++ {
		i = lineStop(src, i)
		switch src[i] {
		case '\n':
			goto done
		case ':':
			if src[i+1] == ' ' || src[i+1] == '\n' {
				bail() // "mapping values are not allowed in this context"
			}
		case '#':
			if i > p && src[i-1] == ' ' {
				comment = true
				goto done
			}
		}
	}
done:
	e := i
	for e > p && src[e-1] == ' ' {
		e--
	}
	return src[p:e], comment, lineEnd(src, i) + 1
}

// plain scans a plain scalar, folding continuation lines that are indented
// more than the enclosing collection (libyaml's scan_plain_scalar).
func (f *fastYAML) plain(q, parent int) []byte {
	src, a := f.src, f.a
	text, comment, next := plainLine(src, q)
	f.pos = next
	if comment {
		return text
	}
	start := -1 // text copied into a.strs once a line is folded in
	breaks := 0
	for f.pos < len(src) {
		i := f.pos
		for src[i] == ' ' {
			i++
		}
		if src[i] == '\n' {
			breaks++
			f.pos = i + 1
			continue
		}
		if i-f.pos <= parent || src[i] == '#' {
			break
		}
		more, comment, next := plainLine(src, i)
		if start < 0 {
			start = len(a.strs)
			a.strs = append(a.strs, text...)
		}
		if breaks == 0 {
			a.strs = append(a.strs, ' ')
		}
		for ; breaks > 0; breaks-- {
			a.strs = append(a.strs, '\n')
		}
		a.strs = append(a.strs, more...)
		f.pos = next
		if comment {
			break
		}
	}
	if start >= 0 {
		return a.strs[start:len(a.strs):len(a.strs)]
	}
	return text
}

// continuation checks a new line inside a quoted scalar: blank, or indented
// more than the enclosing collection (libyaml is laxer; yaml.v2 decides
// those cases).
func (f *fastYAML) continuation(p, parent int) {
	src := f.src
	if p >= len(src) {
		bail() // unterminated
	}
	i := p
	for src[i] == ' ' {
		i++
	}
	if src[i] != '\n' && i-p <= parent {
		bail()
	}
}

// doubleQuoted scans a double-quoted scalar at q (libyaml's
// scan_flow_scalar) and returns its value and the offset past the closing
// quote. parent < 0 means it must fit on one line.
func (f *fastYAML) doubleQuoted(q, parent int) ([]byte, int) {
	src, a := f.src, f.a
	p := q + 1
	// Fast path: no escapes, no line breaks.
	for i := p; ; i++ {
		c := src[i]
		if c == '"' {
			return src[p:i], i + 1
		}
		if c == '\\' || c == '\n' {
			break
		}
	}
	start := len(a.strs)
	for {
		var leadingBlanks bool
		p, leadingBlanks = f.doubleQuotedRun(p, parent)
		if src[p] == '"' {
			return a.strs[start:len(a.strs):len(a.strs)], p + 1
		}
		p = f.foldBlanks(p, parent, leadingBlanks)
	}
}

// doubleQuotedRun appends the non-blank characters from p, decoding
// escapes, up to a blank, a line break or the closing quote. It reports
// whether it stopped after an escaped line break, which joins the lines
// without a space.
func (f *fastYAML) doubleQuotedRun(p, parent int) (next int, leadingBlanks bool) {
	src, a := f.src, f.a
	for {
		c := src[p]
		if c == ' ' || c == '\n' || c == '"' {
			return p, false
		}
		if c != '\\' {
			a.strs = append(a.strs, c)
			p++
			continue
		}
		e := src[p+1]
		if e == '\n' {
			if parent < 0 {
				bail()
			}
			p += 2
			f.continuation(p, parent)
			return p, true
		}
		p = f.escape(e, p+2)
	}
}

// escape appends what the escape \e stands for; p is just past e. It
// returns the offset past the escape's digits, if any.
func (f *fastYAML) escape(e byte, p int) int {
	a := f.a
	switch e {
	case '0':
		a.strs = append(a.strs, 0)
	case 'a':
		a.strs = append(a.strs, '\a')
	case 'b':
		a.strs = append(a.strs, '\b')
	case 't':
		a.strs = append(a.strs, '\t')
	case 'n':
		a.strs = append(a.strs, '\n')
	case 'v':
		a.strs = append(a.strs, '\v')
	case 'f':
		a.strs = append(a.strs, '\f')
	case 'r':
		a.strs = append(a.strs, '\r')
	case 'e':
		a.strs = append(a.strs, 0x1B)
	case ' ', '"', '\'', '\\':
		a.strs = append(a.strs, e)
	case 'N':
		a.strs = append(a.strs, "\u0085"...)
	case '_':
		a.strs = append(a.strs, "\u00A0"...)
	case 'L':
		a.strs = append(a.strs, "\u2028"...)
	case 'P':
		a.strs = append(a.strs, "\u2029"...)
	case 'x', 'u', 'U':
		return f.hexEscape(e, p)
	default:
		bail()
	}
	return p
}

// hexEscape appends the code point of a \x, \u or \U escape whose hex
// digits start at p, and returns the offset past them.
func (f *fastYAML) hexEscape(e byte, p int) int {
	n := 2
	switch e {
	case 'u':
		n = 4
	case 'U':
		n = 8
	}
	var r rune
	for k := range n {
		d := unhex(f.src[p+k])
		if d < 0 {
			bail()
		}
		r = r<<4 | rune(d)
	}
	if r >= 0xD800 && r <= 0xDFFF || r > 0x10FFFF {
		bail()
	}
	f.a.strs = utf8.AppendRune(f.a.strs, r)
	return p + n
}

// foldBlanks consumes spaces and line breaks inside a quoted scalar and
// appends what they fold to.
func (f *fastYAML) foldBlanks(p, parent int, leadingBlanks bool) int {
	src, a := f.src, f.a
	spaces, leadingBreak, trailing := 0, false, 0
	for src[p] == ' ' || src[p] == '\n' {
		if src[p] == ' ' {
			if !leadingBlanks {
				spaces++
			}
			p++
			continue
		}
		if parent < 0 {
			bail() // keys stay on one line
		}
		if !leadingBlanks {
			spaces = 0
			leadingBreak = true
			leadingBlanks = true
		} else {
			trailing++
		}
		p++
		f.continuation(p, parent)
	}
	if leadingBlanks {
		if leadingBreak && trailing == 0 {
			a.strs = append(a.strs, ' ')
		}
		for ; trailing > 0; trailing-- {
			a.strs = append(a.strs, '\n')
		}
	} else {
		for ; spaces > 0; spaces-- {
			a.strs = append(a.strs, ' ')
		}
	}
	return p
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// singleQuoted scans a single-quoted scalar, where two single quotes
// stand for one.
func (f *fastYAML) singleQuoted(q, parent int) ([]byte, int) {
	src, a := f.src, f.a
	p := q + 1
	for i := p; ; i++ {
		c := src[i]
		if c == '\'' && src[i+1] != '\'' {
			return src[p:i], i + 1
		}
		if c == '\'' || c == '\n' {
			break
		}
	}
	start := len(a.strs)
	for {
		for {
			c := src[p]
			if c == ' ' || c == '\n' {
				break
			}
			if c == '\'' {
				if src[p+1] != '\'' {
					return a.strs[start:len(a.strs):len(a.strs)], p + 1
				}
				p++
			}
			a.strs = append(a.strs, c)
			p++
		}
		p = f.foldBlanks(p, parent, false)
	}
}

// blockScalar scans a literal (|) or folded (>) scalar whose indicator is at
// q (libyaml's scan_block_scalar), for a collection at column parent.
func (f *fastYAML) blockScalar(q, parent int) node {
	src, a := f.src, f.a
	literal := src[q] == '|'
	chomp, increment, p := blockHeader(src, q+1)
	f.endOfLine(p)
	indent := 0
	if increment > 0 {
		indent = parent + increment
	}
	// Leading empty lines, and the indentation if it is not given.
	p, col, trailing, maxIndent := blankLines(src, f.pos, indent)
	if indent == 0 {
		if p < len(src) && col < maxIndent {
			bail() // a blank line indented deeper than the content
		}
		indent = max(maxIndent, parent+1, 1)
	}
	start := len(a.strs)
	p, trailing, leadingBreak := f.blockLines(p, col, indent, trailing, literal)
	if chomp != -1 && leadingBreak {
		a.strs = append(a.strs, '\n')
	}
	if chomp == 1 {
		for ; trailing > 0; trailing-- {
			a.strs = append(a.strs, '\n')
		}
	}
	f.pos = p
	return node{kind: kStr, s: a.strs[start:len(a.strs):len(a.strs)]}
}

// blockHeader reads the chomping (+ keep, - strip) and indentation
// indicators that follow | or > at p, in either order.
func blockHeader(src []byte, p int) (chomp, increment, next int) {
	isDigit := func(c byte) bool { return c >= '1' && c <= '9' }
	switch c := src[p]; {
	case c == '+' || c == '-':
		chomp = 1
		if c == '-' {
			chomp = -1
		}
		p++
		if isDigit(src[p]) {
			increment = int(src[p] - '0')
			p++
		}
	case isDigit(c):
		increment = int(c - '0')
		p++
		if c := src[p]; c == '+' || c == '-' {
			chomp = 1
			if c == '-' {
				chomp = -1
			}
			p++
		}
	}
	return chomp, increment, p
}

// blankLines skips the empty lines from p, counting the spaces of each up
// to indent (all of them when indent is 0). It returns where the next
// non-empty line starts, that line's counted indentation, the number of
// empty lines and the deepest indentation seen.
func blankLines(src []byte, p, indent int) (next, col, n, maxIndent int) {
	for p < len(src) {
		col = 0
		for (indent == 0 || col < indent) && src[p+col] == ' ' {
			col++
		}
		maxIndent = max(maxIndent, col)
		if src[p+col] != '\n' {
			return p, col, n, maxIndent
		}
		n++
		p += col + 1
	}
	return p, 0, n, maxIndent
}

// blockLines appends the content lines of a block scalar, the first at p
// indented by col, folding line breaks unless literal. It returns where
// the scalar ends, the empty lines pending at its end, and whether any
// line was read.
func (f *fastYAML) blockLines(p, col, indent, trailing int, literal bool) (next, pending int, leadingBreak bool) {
	src, a := f.src, f.a
	leadingBlank := false
	for col == indent && p+col < len(src) {
		c := p + col // first content character of the line
		trailingBlank := src[c] == ' '
		if !literal && leadingBreak && !leadingBlank && !trailingBlank {
			if trailing == 0 {
				a.strs = append(a.strs, ' ')
			}
		} else if leadingBreak {
			a.strs = append(a.strs, '\n')
		}
		for ; trailing > 0; trailing-- {
			a.strs = append(a.strs, '\n')
		}
		leadingBlank = trailingBlank
		e := lineEnd(src, c)
		a.strs = append(a.strs, src[c:e]...)
		leadingBreak = true
		var n int
		p, col, n, _ = blankLines(src, e+1, indent)
		trailing += n
	}
	return p, trailing, leadingBreak
}

// resolveTable mirrors yaml.v2's first-character hints for plain scalars.
var resolveTable = func() (t [256]byte) {
	t['+'], t['-'] = 'S', 'S'
	for c := '0'; c <= '9'; c++ {
		t[c] = 'D'
	}
	for _, c := range "yYnNtTfFoO~" {
		t[c] = 'M'
	}
	t['.'] = '.'
	return t
}()

// resolvePlain types a plain scalar as yaml.v2's resolve does (YAML 1.1:
// yes/no/on/off are booleans) and as the JSON round trip then stores it
// (every number a float64). Values that would fail later (.nan, .inf) are
// left to the slow path.
func resolvePlain(s []byte) node {
	hint := resolveTable[s[0]]
	if hint == 0 {
		return node{kind: kStr, s: s}
	}
	switch string(s) {
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return node{kind: kTrue}
	case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return node{kind: kFalse}
	case "~", "null", "Null", "NULL":
		return node{kind: kNull}
	case ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF":
		bail()
	}
	switch hint {
	case '.':
		if v, err := strconv.ParseFloat(string(s), 64); err == nil {
			return num(v)
		}
	case 'D', 'S':
		if !mayBeNumber(s) {
			break
		}
		plain := string(s)
		if strings.IndexByte(plain, '_') >= 0 {
			plain = strings.ReplaceAll(plain, "_", "")
		}
		if v, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return num(float64(v))
		}
		if v, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return num(float64(v))
		}
		if yamlStyleFloat(plain) {
			if v, err := strconv.ParseFloat(plain, 64); err == nil {
				return num(v)
			}
		}
		if strings.HasPrefix(plain, "0b") {
			if v, err := strconv.ParseInt(plain[2:], 2, 64); err == nil {
				return num(float64(v))
			}
			if v, err := strconv.ParseUint(plain[2:], 2, 64); err == nil {
				return num(float64(v))
			}
		} else if strings.HasPrefix(plain, "-0b") {
			if v, err := strconv.ParseInt("-"+plain[3:], 2, 64); err == nil {
				return num(float64(v))
			}
		}
	}
	return node{kind: kStr, s: s}
}

// mayBeNumber rules out, without allocating, text that no strconv call in
// resolvePlain could accept (such as versions like 0.3.0).
func mayBeNumber(s []byte) bool {
	dots := 0
	for _, c := range s {
		switch {
		case c == '.':
			dots++
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F', c == '_', c == '+', c == '-', c == 'x', c == 'X', c == 'o', c == 'O':
		default:
			return false
		}
	}
	return dots <= 1
}

func num(f float64) node {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		bail()
	}
	return node{kind: kNum, f: f}
}

// yamlStyleFloat matches ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
func yamlStyleFloat(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
