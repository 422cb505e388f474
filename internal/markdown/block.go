package markdown

import "strings"

// kind is what a block is.
type kind uint8

const (
	kDoc kind = iota
	kQuote
	kList
	kItem
	kPara
	kHeading
	kBreak // a thematic break
	kFence
	kIndented
	kHTML
)

// maxDepth bounds how deep quotes and lists nest: a marker past it is
// text, so hostile nesting costs no more than a paragraph.
const maxDepth = 32

// block is one node of the block tree.
type block struct {
	kind       kind
	parent     *block
	children   []*block
	lines      []string // a leaf's content
	open       bool
	depth      int
	start, end int // first and last line, for list tightness

	level int // heading

	// list and item
	ordered bool
	marker  byte // '-', '+', '*'; '.' or ')' when ordered
	num     int  // an ordered list's first number
	indent  int  // an item's content column
	tight   bool

	// fenced code and HTML blocks
	fence     byte
	fenceLen  int
	fenceCol  int
	info      string
	htmlClose int
}

func (b *block) last() *block {
	if len(b.children) == 0 {
		return nil
	}
	return b.children[len(b.children)-1]
}

func (b *block) container() bool {
	return b.kind == kDoc || b.kind == kQuote || b.kind == kList || b.kind == kItem
}

// blockParser builds the block tree line by line, as CommonMark's
// reference parser does: match the open containers, start new blocks,
// add the rest of the line to the innermost open block.
type blockParser struct {
	doc, tip, oldTip *block
	matched          *block
	allClosed        bool
	refs             refMap

	line     string
	lineNo   int
	pos      int // byte offset in line
	nonspace int // offset of the next non-space byte
	indent   int // nonspace - pos
	blank    bool
}

func parseBlocks(src string) (*block, refMap) {
	doc := &block{kind: kDoc, open: true}
	p := &blockParser{doc: doc, tip: doc}
	for len(src) > 0 {
		i := strings.IndexAny(src, "\r\n")
		line := src
		if i < 0 {
			src = ""
		} else {
			line = src[:i]
			if src[i] == '\r' && i+1 < len(src) && src[i+1] == '\n' {
				i++
			}
			src = src[i+1:]
		}
		p.addLine(expandIndent(line))
	}
	for p.tip != nil {
		p.finalize(p.tip, p.lineNo)
	}
	return doc, p.refs
}

// expandIndent turns the tabs among a line's leading spaces and '>'
// into spaces (tab stops of 4), so that columns are bytes there.
func expandIndent(line string) string {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '>') {
		i++
	}
	if i == len(line) || line[i] != '\t' {
		return line
	}
	var b strings.Builder
	col := 0
	for i = 0; i < len(line) && (line[i] == ' ' || line[i] == '>' || line[i] == '\t'); i++ {
		if line[i] == '\t' {
			n := 4 - col%4
			b.WriteString("    "[:n])
			col += n
			continue
		}
		b.WriteByte(line[i])
		col++
	}
	b.WriteString(line[i:])
	return b.String()
}

func (p *blockParser) findNonspace() {
	i := p.pos
	for i < len(p.line) && p.line[i] == ' ' {
		i++
	}
	p.nonspace, p.indent = i, i-p.pos
	p.blank = i == len(p.line)
}

func (p *blockParser) peek() byte {
	if p.nonspace < len(p.line) {
		return p.line[p.nonspace]
	}
	return 0
}

// advance moves past n bytes, or to the line's end.
func (p *blockParser) advance(n int) { p.pos = min(p.pos+n, len(p.line)) }

func (p *blockParser) addLine(line string) {
	p.lineNo++
	p.line, p.pos = line, 0
	p.oldTip = p.tip
	c := p.doc
	for {
		last := c.last()
		if last == nil || !last.open {
			break
		}
		p.findNonspace()
		switch p.continues(last) {
		case matched:
			c = last
			continue
		case consumed:
			return
		}
		break
	}
	p.allClosed = c == p.oldTip
	p.matched = c
	leaf := c.kind != kPara && !c.container()
	for !leaf {
		p.findNonspace()
		if p.indent < 4 && !maySpecial(p.peek()) {
			break
		}
		r := p.startBlock(c)
		if r == noStart {
			break
		}
		c = p.tip
		leaf = r == startedLeaf
	}
	p.rest(c)
}

// rest adds what is left of the line to the block it belongs to.
func (p *blockParser) rest(c *block) {
	p.findNonspace()
	if !p.allClosed && !p.blank && p.tip.kind == kPara {
		// A lazy continuation line.
		p.addText(p.tip, p.line[p.nonspace:])
		return
	}
	p.closeUnmatched()
	switch {
	case c.kind == kFence && c.start == p.lineNo:
		// The opening fence is not content.
	case c.kind == kFence || c.kind == kIndented || c.kind == kHTML:
		p.addText(c, p.line[p.pos:])
		if c.kind == kHTML && c.htmlClose <= 5 && htmlBlockEnds(c.htmlClose, p.line[p.pos:]) {
			p.finalize(c, p.lineNo)
		}
	case c.kind == kPara:
		p.addText(c, p.line[p.nonspace:])
	case !p.blank && c.container():
		para := p.addChild(kPara)
		p.addText(para, p.line[p.nonspace:])
	case p.blank && c.container():
		// A blank line ends no container here; lists' tightness reads
		// the gaps between their children's lines.
	}
}

func (p *blockParser) addText(b *block, s string) {
	b.lines = append(b.lines, s)
	b.end = p.lineNo
}

func maySpecial(c byte) bool {
	switch c {
	case '#', '`', '~', '*', '+', '_', '=', '<', '>', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

func (p *blockParser) closeUnmatched() {
	if p.allClosed {
		return
	}
	for p.oldTip != p.matched {
		parent := p.oldTip.parent
		p.finalize(p.oldTip, p.lineNo-1)
		p.oldTip = parent
	}
	p.allClosed = true
}

// addChild opens a block of kind k under the tip, closing the blocks
// that cannot hold it.
func (p *blockParser) addChild(k kind) *block {
	for !canContain(p.tip, k) {
		p.finalize(p.tip, p.lineNo-1)
	}
	b := &block{kind: k, parent: p.tip, open: true, depth: p.tip.depth + 1, start: p.lineNo, end: p.lineNo}
	p.tip.children = append(p.tip.children, b)
	p.tip = b
	return b
}

func canContain(parent *block, k kind) bool {
	switch parent.kind {
	case kList:
		return k == kItem
	case kDoc, kQuote, kItem:
		return k != kItem
	}
	return false
}

func (p *blockParser) finalize(b *block, line int) {
	if !b.open {
		return
	}
	b.open = false
	p.tip = b.parent
	switch b.kind {
	case kPara:
		p.paragraphRefs(b)
	case kIndented:
		for len(b.lines) > 0 && strings.TrimSpace(b.lines[len(b.lines)-1]) == "" {
			b.lines = b.lines[:len(b.lines)-1]
		}
	case kQuote, kItem:
		if l := b.last(); l != nil && l.end > b.end {
			b.end = l.end
		}
	case kList:
		b.tight = listTight(b)
		if l := b.last(); l != nil {
			b.end = l.end
		}
	case kFence:
		b.end = max(b.end, line)
	}
}

// paragraphRefs takes the link reference definitions off a paragraph's
// start; a paragraph left empty is removed.
func (p *blockParser) paragraphRefs(b *block) {
	if len(b.lines) == 0 || !strings.HasPrefix(b.lines[0], "[") {
		return
	}
	text := strings.Join(b.lines, "\n")
	for {
		n := parseRefDef(text, &p.refs)
		if n == 0 {
			break
		}
		text = text[n:]
	}
	if strings.TrimSpace(text) == "" {
		b.lines = nil
		if b.parent != nil {
			b.parent.children = b.parent.children[:len(b.parent.children)-1]
		}
		return
	}
	b.lines = strings.Split(text, "\n")
}

// listTight: a list is loose when a blank line separates two of its
// items or two blocks inside one of them.
func listTight(l *block) bool {
	for i, item := range l.children {
		if i+1 < len(l.children) && l.children[i+1].start > item.end+1 {
			return false
		}
		for j, sub := range item.children {
			if j+1 < len(item.children) && item.children[j+1].start > sub.end+1 {
				return false
			}
		}
	}
	return true
}
