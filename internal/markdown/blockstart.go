package markdown

import "strings"

// What matching an open block against a line gave.
const (
	matched = iota
	notMatched
	consumed // the line ended the block (a closing fence)
)

// continues says whether the open block b goes on on this line, and
// moves past its markers.
func (p *blockParser) continues(b *block) int {
	switch b.kind {
	case kQuote:
		if p.indent < 4 && p.peek() == '>' {
			p.pos = p.nonspace + 1
			p.skipOneSpace()
			b.end = p.lineNo
			return matched
		}
		return notMatched
	case kItem:
		switch {
		case p.blank:
			if len(b.children) == 0 {
				return notMatched
			}
			p.pos = p.nonspace
		case p.indent >= b.indent:
			p.advance(b.indent)
		default:
			return notMatched
		}
		return matched
	case kHeading, kBreak:
		return notMatched
	case kFence:
		return p.fenceContinues(b)
	case kIndented:
		switch {
		case p.indent >= 4:
			p.advance(4)
		case p.blank:
			p.pos = p.nonspace
		default:
			return notMatched
		}
		return matched
	case kHTML:
		if p.blank && b.htmlClose >= 6 {
			return notMatched
		}
		return matched
	case kPara:
		if p.blank {
			return notMatched
		}
		return matched
	}
	return matched // the document and lists
}

func (p *blockParser) skipOneSpace() {
	if p.pos < len(p.line) && (p.line[p.pos] == ' ' || p.line[p.pos] == '\t') {
		p.pos++
	}
}

func (p *blockParser) fenceContinues(b *block) int {
	if p.indent < 4 && p.peek() == b.fence {
		n := run(p.line[p.nonspace:], b.fence)
		if n >= b.fenceLen && strings.TrimSpace(p.line[p.nonspace+n:]) == "" {
			b.end = p.lineNo
			p.finalize(b, p.lineNo)
			return consumed
		}
	}
	// The fence's own indentation is taken off its content.
	for i := 0; i < b.fenceCol && p.pos < len(p.line) && p.line[p.pos] == ' '; i++ {
		p.pos++
	}
	return matched
}

// run counts the bytes c at s's start.
func run(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// What trying to start a block gave.
const (
	noStart = iota
	startedContainer
	startedLeaf
)

// startBlock tries each kind of block that may start on the line, in
// CommonMark's order.
func (p *blockParser) startBlock(c *block) int {
	s := p.line[p.nonspace:]
	if p.indent >= 4 {
		if p.tip.kind == kPara || p.blank {
			return noStart
		}
		p.advance(4)
		p.closeUnmatched()
		p.addChild(kIndented)
		return startedLeaf
	}
	switch p.peek() {
	case '>':
		if c.depth >= maxDepth {
			return noStart
		}
		p.pos = p.nonspace + 1
		p.skipOneSpace()
		p.closeUnmatched()
		p.addChild(kQuote).end = p.lineNo
		return startedContainer
	case '#':
		return p.atxHeading(s)
	case '`', '~':
		if p.fencedCode(s) {
			return startedLeaf
		}
	case '<':
		if p.htmlBlock(c, s) {
			return startedLeaf
		}
	}
	if c.kind == kPara && p.setextHeading(c, s) {
		return startedLeaf
	}
	if thematicBreak(s) {
		p.closeUnmatched()
		p.addChild(kBreak)
		p.pos = len(p.line)
		return startedLeaf
	}
	return p.listItem(c, s)
}

func (p *blockParser) atxHeading(s string) int {
	n := run(s, '#')
	if n > 6 || (n < len(s) && s[n] != ' ' && s[n] != '\t') {
		return noStart
	}
	p.closeUnmatched()
	h := p.addChild(kHeading)
	h.level = n
	text := strings.TrimSpace(s[n:])
	// A closing run of '#' after a space, or alone, is not text.
	if t := strings.TrimRight(text, "#"); t == "" || strings.HasSuffix(t, " ") || strings.HasSuffix(t, "\t") {
		text = strings.TrimSpace(t)
	}
	h.lines = []string{text}
	p.pos = len(p.line)
	return startedLeaf
}

func (p *blockParser) fencedCode(s string) bool {
	c := s[0]
	n := run(s, c)
	if n < 3 || (c == '`' && strings.IndexByte(s[n:], '`') >= 0) {
		return false
	}
	p.closeUnmatched()
	b := p.addChild(kFence)
	b.fence, b.fenceLen, b.fenceCol = c, n, p.indent
	b.info = unescapeText(strings.TrimSpace(s[n:]))
	p.pos = len(p.line)
	return true
}

func (p *blockParser) setextHeading(c *block, s string) bool {
	if s == "" || (s[0] != '=' && s[0] != '-') || strings.TrimRight(s[run(s, s[0]):], " \t") != "" {
		return false
	}
	p.closeUnmatched()
	p.paragraphRefs(c)
	if c.lines == nil {
		// Nothing but reference definitions: the line is something else.
		c.open, p.tip = false, c.parent
		return false
	}
	c.kind = kHeading
	c.level = 1
	if s[0] == '-' {
		c.level = 2
	}
	c.lines = []string{strings.TrimSpace(strings.Join(c.lines, "\n"))}
	c.end = p.lineNo
	p.finalize(c, p.lineNo)
	p.pos = len(p.line)
	return true
}

func thematicBreak(s string) bool {
	if s == "" || (s[0] != '*' && s[0] != '-' && s[0] != '_') {
		return false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case s[0]:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}

func (p *blockParser) listItem(c *block, s string) int {
	if c.depth+1 >= maxDepth || s == "" {
		return noStart
	}
	var marker byte
	width, num := 0, 0
	switch {
	case s[0] == '-' || s[0] == '+' || s[0] == '*':
		marker, width = s[0], 1
	case s[0] >= '0' && s[0] <= '9':
		for width < len(s) && width < 9 && s[width] >= '0' && s[width] <= '9' {
			num = num*10 + int(s[width]-'0')
			width++
		}
		if width == len(s) || (s[width] != '.' && s[width] != ')') || (c.kind == kPara && num != 1) {
			return noStart
		}
		marker = s[width]
		width++
	default:
		return noStart
	}
	after := s[width:]
	if after != "" && after[0] != ' ' && after[0] != '\t' {
		return noStart
	}
	restBlank := strings.TrimSpace(after) == ""
	if c.kind == kPara && restBlank {
		return noStart // an empty item does not interrupt a paragraph
	}
	spaces := run(after, ' ')
	if after != "" && after[0] == '\t' {
		spaces = 1
	}
	if spaces >= 5 || restBlank {
		spaces = 1
	}
	p.closeUnmatched()
	ordered := marker == '.' || marker == ')'
	if p.tip.kind != kList || p.tip.marker != marker {
		l := p.addChild(kList)
		l.ordered, l.marker, l.num = ordered, marker, num
	}
	item := p.addChild(kItem)
	item.indent = p.indent + width + spaces
	p.pos = min(p.nonspace+width+spaces, len(p.line))
	return startedContainer
}
