package markdown

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// ikind is what an inline node is.
type ikind uint8

const (
	iText ikind = iota
	iCode
	iSoftBreak
	iHardBreak
	iEmph
	iStrong
	iLink     // a link or an image, its text as children
	iAutoLink // its text is the address
)

// inline is a node of a paragraph's or heading's content. Siblings are
// doubly linked so that wrapping a run of them (in emphasis, in a link)
// costs the same whatever its length.
type inline struct {
	kind        ikind
	text        string
	dest, title string
	first, last *inline
	prev, next  *inline
}

func (n *inline) append(c *inline) {
	c.prev, c.next = n.last, nil
	if n.last != nil {
		n.last.next = c
	} else {
		n.first = c
	}
	n.last = c
}

// unlink takes c out of parent's children.
func (parent *inline) unlink(c *inline) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		parent.first = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		parent.last = c.prev
	}
	c.prev, c.next = nil, nil
}

// wrap moves parent's children after from (to the end) into n, and
// appends n to parent.
func (parent *inline) wrap(from, n *inline) {
	if from.next != nil {
		n.first, n.last = from.next, parent.last
		n.first.prev = nil
		from.next = nil
		parent.last = from
	}
	parent.append(n)
}

// delim is a run of '*' or '_' that may open or close emphasis.
type delim struct {
	c                 byte
	n, orig           int
	node              *inline
	prev, next        *delim
	canOpen, canClose bool
}

// bracket is a '[' or '![' that may open a link.
type bracket struct {
	node      *inline
	prev      *bracket
	prevDelim *delim
	at, depth int // at: the offset after the bracket
	image     bool
	after     bool // another bracket followed it
}

type inlineParser struct {
	s        string
	pos      int
	refs     refMap
	root     *inline
	delims   *delim
	brackets *bracket
	// Link openers below this depth are inactive: a link holds no link.
	inactiveBelow int
	memos         [4]closeMemo
	noCloser      map[int]bool // backtick runs of this length that close nothing further on
}

// parseInlines parses s, a paragraph's or heading's text.
func parseInlines(s string, refs refMap) *inline {
	ip := &inlineParser{s: s, refs: refs, root: &inline{}}
	for ip.pos < len(s) {
		ip.step()
	}
	ip.emphasis(nil)
	return ip.root
}

func (ip *inlineParser) text(s string) *inline {
	n := &inline{kind: iText, text: s}
	ip.root.append(n)
	return n
}

const specials = "\n\\`*_[]!<&"

func (ip *inlineParser) step() {
	s, i := ip.s, ip.pos
	switch s[i] {
	case '\n':
		ip.newline(false)
	case '\\':
		switch {
		case i+1 < len(s) && s[i+1] == '\n':
			ip.pos++
			ip.newline(true)
		case i+1 < len(s) && isPunct(s[i+1]):
			ip.text(s[i+1 : i+2])
			ip.pos += 2
		default:
			ip.text("\\")
			ip.pos++
		}
	case '`':
		ip.codeSpan()
	case '*', '_':
		ip.delimRun()
	case '[':
		ip.openBracket(false, 1)
	case '!':
		if i+1 < len(s) && s[i+1] == '[' {
			ip.openBracket(true, 2)
		} else {
			ip.text("!")
			ip.pos++
		}
	case ']':
		ip.closeBracket()
	case '<':
		ip.angle()
	case '&':
		r, n := entity(s[i:])
		if n == 0 {
			r, n = "&", 1
		}
		ip.text(r)
		ip.pos += n
	default:
		j := strings.IndexAny(s[i:], specials)
		if j < 0 {
			j = len(s) - i
		}
		ip.text(s[i : i+j])
		ip.pos += j
	}
}

// newline ends a line: a hard break after two spaces or a backslash,
// else a soft one. Spaces around it are dropped.
func (ip *inlineParser) newline(hard bool) {
	if l := ip.root.last; l != nil && l.kind == iText {
		t := strings.TrimRight(l.text, " ")
		if len(l.text)-len(t) >= 2 {
			hard = true
		}
		l.text = t
	}
	k := iSoftBreak
	if hard {
		k = iHardBreak
	}
	ip.root.append(&inline{kind: k})
	ip.pos++
	for ip.pos < len(ip.s) && (ip.s[ip.pos] == ' ' || ip.s[ip.pos] == '\t') {
		ip.pos++
	}
}

func (ip *inlineParser) codeSpan() {
	s, i := ip.s, ip.pos
	n := run(s[i:], '`')
	// The closer is the next run of exactly n backticks; once none is
	// found, none is looked for again.
	for j := i + n; j < len(s) && !ip.noCloser[n]; {
		k := strings.IndexByte(s[j:], '`')
		if k < 0 {
			break
		}
		j += k
		m := run(s[j:], '`')
		if m == n {
			code := strings.ReplaceAll(s[i+n:j], "\n", " ")
			if len(code) > 2 && code[0] == ' ' && code[len(code)-1] == ' ' && strings.Trim(code, " ") != "" {
				code = code[1 : len(code)-1]
			}
			ip.root.append(&inline{kind: iCode, text: code})
			ip.pos = j + m
			return
		}
		j += m
	}
	if ip.noCloser == nil {
		ip.noCloser = map[int]bool{}
	}
	ip.noCloser[n] = true
	ip.text(s[i : i+n])
	ip.pos += n
}

// delimRun adds a run of '*' or '_' as text and as a delimiter.
func (ip *inlineParser) delimRun() {
	s, i := ip.s, ip.pos
	c := s[i]
	n := run(s[i:], c)
	before, _ := utf8.DecodeLastRuneInString(s[:i])
	if i == 0 {
		before = '\n'
	}
	after, _ := utf8.DecodeRuneInString(s[i+n:])
	if i+n == len(s) {
		after = '\n'
	}
	bs, as := unicode.IsSpace(before), unicode.IsSpace(after)
	bp, ap := punct(before), punct(after)
	left := !as && (!ap || bs || bp)
	right := !bs && (!bp || as || ap)
	canOpen, canClose := left, right
	if c == '_' {
		canOpen = left && (!right || bp)
		canClose = right && (!left || ap)
	}
	node := ip.text(s[i : i+n])
	ip.pos += n
	if !canOpen && !canClose {
		return
	}
	d := &delim{c: c, n: n, orig: n, node: node, prev: ip.delims, canOpen: canOpen, canClose: canClose}
	if d.prev != nil {
		d.prev.next = d
	}
	ip.delims = d
}

func punct(r rune) bool {
	if r < utf8.RuneSelf {
		return isPunct(byte(r))
	}
	return unicode.IsPunct(r) || unicode.IsSymbol(r)
}

func isPunct(c byte) bool {
	return c > ' ' && c < 0x7f && !isLetter(c) && !isDigit(c)
}

func (ip *inlineParser) removeDelim(d *delim) {
	if d.prev != nil {
		d.prev.next = d.next
	}
	if d.next != nil {
		d.next.prev = d.prev
	} else {
		ip.delims = d.prev
	}
}

// emphasis pairs the delimiters above bottom into emphasis, CommonMark's
// "process emphasis".
func (ip *inlineParser) emphasis(bottom *delim) {
	var openersBottom [2][2][3]*delim
	for a := range openersBottom {
		for b := range openersBottom[a] {
			for c := range openersBottom[a][b] {
				openersBottom[a][b][c] = bottom
			}
		}
	}
	closer := ip.delims
	for closer != nil && closer.prev != bottom {
		closer = closer.prev
	}
	for closer != nil {
		if !closer.canClose {
			closer = closer.next
			continue
		}
		ci, oi := 0, 0
		if closer.c == '_' {
			ci = 1
		}
		if closer.canOpen {
			oi = 1
		}
		ob := &openersBottom[ci][oi][closer.orig%3]
		opener := closer.prev
		for opener != nil && opener != bottom && opener != *ob {
			odd := (closer.canOpen || opener.canClose) && closer.orig%3 != 0 && (opener.orig+closer.orig)%3 == 0
			if opener.c == closer.c && opener.canOpen && !odd {
				break
			}
			opener = opener.prev
		}
		if opener == nil || opener == bottom || opener == *ob {
			*ob = closer.prev
			next := closer.next
			if !closer.canOpen {
				ip.removeDelim(closer)
			}
			closer = next
			continue
		}
		closer = ip.pair(opener, closer)
	}
	for ip.delims != nil && ip.delims != bottom {
		ip.removeDelim(ip.delims)
	}
}

// pair wraps what lies between opener and closer in emphasis, and
// returns the closer to look at next.
func (ip *inlineParser) pair(opener, closer *delim) *delim {
	use := 1
	k := iEmph
	if closer.n >= 2 && opener.n >= 2 {
		use, k = 2, iStrong
	}
	opener.n -= use
	closer.n -= use
	on, cn := opener.node, closer.node
	on.text = on.text[:len(on.text)-use]
	cn.text = cn.text[:len(cn.text)-use]
	em := &inline{kind: k}
	// The nodes between the two runs move into em, which takes their
	// place: splices, whatever their number.
	if on.next != cn {
		em.first, em.last = on.next, cn.prev
		em.first.prev, em.last.next = nil, nil
	}
	on.next, em.prev = em, on
	em.next, cn.prev = cn, em
	opener.next, closer.prev = closer, opener
	if opener.n == 0 {
		ip.root.unlink(on)
		ip.removeDelim(opener)
	}
	if closer.n == 0 {
		ip.root.unlink(cn)
		next := closer.next
		ip.removeDelim(closer)
		return next
	}
	return closer
}
