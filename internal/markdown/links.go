package markdown

import "strings"

// maxLinkTail bounds the bytes read after "](" for a destination and a
// title: each "](" is read at most this far, so that a text of them is
// read in linear time. A longer link stays text.
const maxLinkTail = 2048

type ref struct{ dest, title string }

// refMap holds the link reference definitions, by normalised label.
type refMap map[string]ref

func normalizeLabel(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

func (ip *inlineParser) openBracket(image bool, n int) {
	b := &bracket{node: ip.text(ip.s[ip.pos : ip.pos+n]), prev: ip.brackets, prevDelim: ip.delims,
		at: ip.pos + n, image: image}
	if b.prev != nil {
		b.prev.after = true
		b.depth = b.prev.depth + 1
	}
	ip.brackets = b
	ip.pos += n
}

func (ip *inlineParser) popBracket() {
	b := ip.brackets
	ip.brackets = b.prev
	ip.inactiveBelow = min(ip.inactiveBelow, b.depth)
}

// closeBracket makes a link of the text since the last bracket when a
// destination follows, or when it names a reference definition.
func (ip *inlineParser) closeBracket() {
	ip.pos++
	after := ip.pos
	o := ip.brackets
	if o == nil {
		ip.text("]")
		return
	}
	if !o.image && o.depth < ip.inactiveBelow {
		ip.popBracket()
		ip.text("]")
		return
	}
	dest, title, ok := ip.inlineTail()
	if !ok {
		label := ""
		if n := linkLabel(ip.s[ip.pos:]); n > 2 {
			label = ip.s[ip.pos+1 : ip.pos+n-1]
			ip.pos += n
		} else {
			if !o.after {
				label = ip.s[o.at : after-1]
			}
			if n == 2 {
				ip.pos += n
			}
		}
		var r ref
		if r, ok = ip.refs[normalizeLabel(label)]; ok && label != "" && len(label) < 1000 {
			dest, title = r.dest, r.title
		} else {
			ok = false
		}
	}
	if !ok {
		ip.popBracket()
		ip.pos = after
		ip.text("]")
		return
	}
	// Emphasis inside the link text pairs first; then the text moves
	// into the link, in place of the bracket.
	ip.emphasis(o.prevDelim)
	link := &inline{kind: iLink, dest: dest, title: title}
	ip.root.wrap(o.node, link)
	ip.root.unlink(o.node)
	ip.popBracket()
	if !o.image {
		ip.inactiveBelow = o.depth
	}
}

// inlineTail reads "(destination title)" after a link's text.
func (ip *inlineParser) inlineTail() (dest, title string, ok bool) {
	s := ip.s[ip.pos:min(len(ip.s), ip.pos+maxLinkTail)]
	if s == "" || s[0] != '(' {
		return "", "", false
	}
	i := skipSpaceNL(s, 1)
	d, n := linkDest(s[i:])
	if n < 0 {
		return "", "", false
	}
	i += n
	j := skipSpaceNL(s, i)
	if j > i && j < len(s) {
		if t, m := linkTitle(s[j:]); m > 0 {
			title = t
			j = skipSpaceNL(s, j+m)
		}
	}
	if j >= len(s) || s[j] != ')' {
		return "", "", false
	}
	ip.pos += j + 1
	return d, title, true
}

// skipSpaceNL skips spaces and at most one line break.
func skipSpaceNL(s string, i int) int {
	nl := false
	for i < len(s) {
		switch s[i] {
		case ' ', '\t':
		case '\n':
			if nl {
				return i
			}
			nl = true
		default:
			return i
		}
		i++
	}
	return i
}

// linkDest reads a destination at s's start: its text and length, -1
// when there is none.
func linkDest(s string) (string, int) {
	if strings.HasPrefix(s, "<") {
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '\n', '<':
				return "", -1
			case '>':
				return unescapeText(s[1:i]), i + 1
			}
		}
		return "", -1
	}
	depth, i := 0, 0
loop:
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s) && isPunct(s[i+1]):
			i++
		case c == '(':
			depth++
			if depth > 32 {
				return "", -1
			}
		case c == ')':
			if depth == 0 {
				break loop
			}
			depth--
		case c <= ' ' || c == 0x7f:
			break loop
		}
	}
	if depth != 0 {
		return "", -1
	}
	return unescapeText(s[:i]), i
}

// linkTitle reads a quoted or parenthesised title at s's start (a
// paragraph's text: it holds no blank line).
func linkTitle(s string) (string, int) {
	closer := s[0]
	switch closer {
	case '"', '\'':
	case '(':
		closer = ')'
	default:
		return "", 0
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case closer:
			return unescapeText(s[1:i]), i + 1
		case '(':
			if closer == ')' {
				return "", 0
			}
		}
	}
	return "", 0
}

// linkLabel is the length of the "[label]" at s's start, 0 when there is
// none.
func linkLabel(s string) int {
	if s == "" || s[0] != '[' {
		return 0
	}
	for i := 1; i < len(s) && i < 1001; i++ {
		switch s[i] {
		case '\\':
			i++
		case '[':
			return 0
		case ']':
			return i + 1
		}
	}
	return 0
}

// parseRefDef reads one link reference definition at text's start into
// refs, and returns the bytes it took (0 when there is none).
func parseRefDef(text string, refs *refMap) int {
	i := 0
	for i < 3 && i < len(text) && text[i] == ' ' {
		i++
	}
	n := linkLabel(text[i:])
	if n <= 2 || i+n >= len(text) || text[i+n] != ':' {
		return 0
	}
	label := text[i+1 : i+n-1]
	if strings.TrimSpace(label) == "" {
		return 0
	}
	j := skipSpaceNL(text, i+n+1)
	dest, m := linkDest(text[j:])
	if m <= 0 {
		return 0
	}
	j += m
	title, end := "", -1
	if k := skipSpaceNL(text, j); k > j && k < len(text) {
		if t, tl := linkTitle(text[k:min(len(text), k+maxLinkTail)]); tl > 0 {
			if e := lineEnd(text, k+tl); e >= 0 {
				title, end = t, e
			}
		}
	}
	if end < 0 {
		// No title: nothing may follow the destination on its line.
		if end = lineEnd(text, j); end < 0 {
			return 0
		}
	}
	if *refs == nil {
		*refs = refMap{}
	}
	key := normalizeLabel(label)
	if _, ok := (*refs)[key]; !ok {
		(*refs)[key] = ref{dest: dest, title: title}
	}
	return end
}

// lineEnd is the offset after the line break that ends text's line at
// i when only spaces are left on it, -1 otherwise.
func lineEnd(text string, i int) int {
	for ; i < len(text); i++ {
		switch text[i] {
		case ' ', '\t':
		case '\n':
			return i + 1
		default:
			return -1
		}
	}
	return i
}

// angle reads what starts with '<': an autolink, raw HTML (dropped), or
// the character itself.
func (ip *inlineParser) angle() {
	s := ip.s[ip.pos:]
	if n := autolink(s); n > 0 {
		addr := s[1 : n-1]
		ip.root.append(&inline{kind: iAutoLink, text: addr, dest: addr})
		ip.pos += n
		return
	}
	if n := ip.rawHTML(ip.pos); n > 0 {
		ip.pos += n
		return
	}
	ip.text("<")
	ip.pos++
}

// autolink is the length of the "<scheme:...>" or "<address@host>" at
// s's start, 0 when there is none.
func autolink(s string) int {
	i := 1
	for i < len(s) && i < 34 && (isLetter(s[i]) || (i > 1 && (isDigit(s[i]) || s[i] == '+' || s[i] == '.' || s[i] == '-'))) {
		i++
	}
	if i >= 3 && i < len(s) && s[i] == ':' {
		for i++; i < len(s); i++ {
			switch c := s[i]; {
			case c == '>':
				return i + 1
			case c <= ' ' || c == '<' || c == 0x7f:
				return 0
			}
		}
		return 0
	}
	// An e-mail address.
	at := -1
	for i = 1; i < len(s) && i < 512; i++ {
		switch c := s[i]; {
		case c == '@' && at < 0 && i > 1:
			at = i
		case c == '>':
			if at > 0 && i > at+1 {
				return i + 1
			}
			return 0
		case isLetter(c) || isDigit(c) || c == '.' || c == '-':
		case at < 0 && strings.IndexByte("!#$%&'*+/=?^_`{|}~", c) >= 0:
		default:
			return 0
		}
	}
	return 0
}
