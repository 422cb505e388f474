package markdown

import "strings"

// Raw HTML is recognised as CommonMark recognises it, only to be
// dropped: none of a description's markup reaches the page.

// maxTag bounds the bytes read to recognise one tag, so that a text of
// unclosed tags is read in linear time. Longer tags stay text.
const maxTag = 1024

// htmlBlock starts an HTML block (the seven kinds of CommonMark) when
// the line opens one.
func (p *blockParser) htmlBlock(c *block, s string) bool {
	kind := htmlBlockStart(s)
	if kind == 0 || (kind == 7 && (c.kind == kPara || (!p.allClosed && p.tip.kind == kPara))) {
		return false
	}
	p.closeUnmatched()
	p.addChild(kHTML).htmlClose = kind
	return true
}

func htmlBlockStart(s string) int {
	switch {
	case strings.HasPrefix(s, "<!--"):
		return 2
	case strings.HasPrefix(s, "<?"):
		return 3
	case strings.HasPrefix(s, "<![CDATA["):
		return 5
	case len(s) > 2 && s[1] == '!' && isLetter(s[2]):
		return 4
	}
	name, rest := tagName(strings.TrimPrefix(s[1:], "/"))
	switch strings.ToLower(name) {
	case "script", "pre", "style", "textarea":
		if s[1] != '/' && (rest == "" || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '>') {
			return 1
		}
	case "":
		return 0
	}
	if blockTag(strings.ToLower(name)) && (rest == "" || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '>' || strings.HasPrefix(rest, "/>")) {
		return 6
	}
	if n := htmlTag(s); n > 0 && strings.TrimSpace(s[n:]) == "" {
		return 7
	}
	return 0
}

// htmlBlockEnds says whether line ends an HTML block of kind 1 to 5.
func htmlBlockEnds(kind int, line string) bool {
	switch kind {
	case 1:
		l := strings.ToLower(line)
		return strings.Contains(l, "</script>") || strings.Contains(l, "</pre>") ||
			strings.Contains(l, "</style>") || strings.Contains(l, "</textarea>")
	case 2:
		return strings.Contains(line, "-->")
	case 3:
		return strings.Contains(line, "?>")
	case 4:
		return strings.Contains(line, ">")
	case 5:
		return strings.Contains(line, "]]>")
	}
	return false
}

func blockTag(name string) bool {
	switch name {
	case "address", "article", "aside", "base", "basefont", "blockquote", "body", "caption", "center", "col",
		"colgroup", "dd", "details", "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure",
		"footer", "form", "frame", "frameset", "h1", "h2", "h3", "h4", "h5", "h6", "head", "header", "hr",
		"html", "iframe", "legend", "li", "link", "main", "menu", "menuitem", "nav", "noframes", "ol",
		"optgroup", "option", "p", "param", "search", "section", "summary", "table", "tbody", "td",
		"tfoot", "th", "thead", "title", "tr", "track", "ul":
		return true
	}
	return false
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

func tagName(s string) (name, rest string) {
	if s == "" || !isLetter(s[0]) {
		return "", s
	}
	i := 1
	for i < len(s) && (isLetter(s[i]) || isDigit(s[i]) || s[i] == '-') {
		i++
	}
	return s[:i], s[i:]
}

// htmlTag is the length of the open or closing tag at s's start, 0 when
// there is none.
func htmlTag(s string) int {
	if len(s) > maxTag {
		s = s[:maxTag]
	}
	if strings.HasPrefix(s, "</") {
		name, rest := tagName(s[2:])
		if name == "" {
			return 0
		}
		rest = trimSpaceLeft(rest)
		if rest == "" || rest[0] != '>' {
			return 0
		}
		return len(s) - len(rest) + 1
	}
	if s == "" || s[0] != '<' {
		return 0
	}
	name, rest := tagName(s[1:])
	if name == "" {
		return 0
	}
	for {
		t := trimSpaceLeft(rest)
		switch {
		case strings.HasPrefix(t, ">"):
			return len(s) - len(t) + 1
		case strings.HasPrefix(t, "/>"):
			return len(s) - len(t) + 2
		case len(t) == len(rest): // attributes need white space before them
			return 0
		}
		n := attribute(t)
		if n == 0 {
			return 0
		}
		rest = t[n:]
	}
}

func trimSpaceLeft(s string) string {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
		i++
	}
	return s[i:]
}

// attribute is the length of the attribute at s's start.
func attribute(s string) int {
	if s == "" || !(isLetter(s[0]) || s[0] == '_' || s[0] == ':') {
		return 0
	}
	i := 1
	for i < len(s) && (isLetter(s[i]) || isDigit(s[i]) || strings.IndexByte("_.:-", s[i]) >= 0) {
		i++
	}
	t := trimSpaceLeft(s[i:])
	if t == "" || t[0] != '=' {
		return i
	}
	t = trimSpaceLeft(t[1:])
	if t == "" {
		return 0
	}
	switch q := t[0]; q {
	case '"', '\'':
		j := strings.IndexByte(t[1:], q)
		if j < 0 {
			return 0
		}
		return len(s) - len(t) + j + 2
	}
	j := 0
	for j < len(t) && strings.IndexByte("\"'=<>` \t\n", t[j]) < 0 {
		j++
	}
	if j == 0 {
		return 0
	}
	return len(s) - len(t) + j
}

// closeMemo remembers where a closing marker was last searched for, so
// that many openers without a closer cost one search, not one each.
type closeMemo struct {
	from, at int // at: the closer's offset, -1 when there is none after from
	set      bool
}

func (m *closeMemo) find(s, closer string, from int) int {
	if m.set && from >= m.from && (m.at < 0 || m.at >= from) {
		return m.at
	}
	m.set, m.from, m.at = true, from, -1
	if i := strings.Index(s[from:], closer); i >= 0 {
		m.at = from + i
	}
	return m.at
}

// rawHTML is the length of the inline raw HTML at s[i:] ('<'), 0 when
// there is none.
func (ip *inlineParser) rawHTML(i int) int {
	s := ip.s
	t := s[i:]
	var memo *closeMemo
	var open, closer string
	switch {
	case strings.HasPrefix(t, "<!-->"):
		return 5
	case strings.HasPrefix(t, "<!--->"):
		return 6
	case strings.HasPrefix(t, "<!--"):
		memo, open, closer = &ip.memos[0], "<!--", "-->"
	case strings.HasPrefix(t, "<?"):
		memo, open, closer = &ip.memos[1], "<?", "?>"
	case strings.HasPrefix(t, "<![CDATA["):
		memo, open, closer = &ip.memos[2], "<![CDATA[", "]]>"
	case len(t) > 2 && t[1] == '!' && isLetter(t[2]):
		memo, open, closer = &ip.memos[3], "<!", ">"
	default:
		return htmlTag(t)
	}
	at := memo.find(s, closer, i+len(open))
	if at < 0 {
		return 0
	}
	return at + len(closer) - i
}
