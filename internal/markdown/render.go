// Package markdown renders the Markdown of catalog descriptions for the
// browser pages: CommonMark's blocks and inlines (GFM tables stay
// text), in time linear in the input, with nothing built at start.
//
// The HTML is safe to embed below a page's own h1 and h2: none of the
// description's markup passes (raw HTML is dropped), headings start at
// h3, links go only to http and https addresses and leave no referrer,
// and images become links to them.
package markdown

import (
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// LinkRel is the rel of every link rendered.
const LinkRel = "nofollow noopener noreferrer"

// HTML renders src as HTML.
func HTML(src string) string {
	doc, refs := parseBlocks(clean(src))
	r := renderer{refs: refs}
	r.blocks(doc.children, false)
	return r.b.String()
}

// Text is src's visible text without its markup, as one line cut to n
// bytes (marked with "…"): code blocks and autolinks are left out, as
// they are from the text the pages used to show.
func Text(src string, n int) string {
	doc, refs := parseBlocks(clean(src))
	r := renderer{refs: refs, text: true, limit: n}
	r.blocks(doc.children, false)
	return shorten(strings.Join(strings.Fields(r.b.String()), " "), n)
}

// clean makes src valid UTF-8 without NULs, as CommonMark asks.
func clean(src string) string {
	if !utf8.ValidString(src) {
		src = strings.ToValidUTF8(src, "\uFFFD")
	}
	return strings.ReplaceAll(src, "\x00", "\uFFFD")
}

// shorten cuts s to at most n bytes at a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

type renderer struct {
	b      strings.Builder
	refs   refMap
	text   bool // the visible text only
	limit  int  // text: stop past this many bytes
	depth  int  // inline elements open
	inLink bool
}

func (r *renderer) full() bool { return r.text && r.b.Len() > r.limit }

func (r *renderer) blocks(bs []*block, tight bool) {
	for i, b := range bs {
		if r.full() {
			return
		}
		if r.text {
			r.textBlock(b)
			continue
		}
		if tight && b.kind == kPara {
			r.inlines(parseInlines(paraText(b), r.refs))
			if i+1 < len(bs) {
				r.b.WriteByte('\n')
			}
			continue
		}
		r.block(b)
	}
}

func (r *renderer) textBlock(b *block) {
	switch b.kind {
	case kPara, kHeading:
		r.inlines(parseInlines(paraText(b), r.refs))
	case kQuote, kList, kItem:
		r.blocks(b.children, false)
	}
	r.b.WriteByte(' ')
}

func paraText(b *block) string {
	return strings.TrimRight(strings.Join(b.lines, "\n"), " \t")
}

func (r *renderer) block(b *block) {
	w := &r.b
	switch b.kind {
	case kPara:
		w.WriteString("<p>")
		r.inlines(parseInlines(paraText(b), r.refs))
		w.WriteString("</p>\n")
	case kHeading:
		h := strconv.Itoa(min(b.level+2, 6))
		w.WriteString("<h" + h + ">")
		r.inlines(parseInlines(paraText(b), r.refs))
		w.WriteString("</h" + h + ">\n")
	case kBreak:
		w.WriteString("<hr>\n")
	case kFence, kIndented:
		w.WriteString("<pre><code")
		if lang, _, _ := strings.Cut(b.info, " "); lang != "" {
			w.WriteString(` class="language-`)
			escape(w, lang)
			w.WriteByte('"')
		}
		w.WriteByte('>')
		for _, l := range b.lines {
			escape(w, l)
			w.WriteByte('\n')
		}
		w.WriteString("</code></pre>\n")
	case kQuote:
		w.WriteString("<blockquote>\n")
		r.blocks(b.children, false)
		w.WriteString("</blockquote>\n")
	case kList:
		r.list(b)
	}
}

func (r *renderer) list(l *block) {
	w := &r.b
	tag := "ul"
	if l.ordered {
		tag = "ol"
	}
	w.WriteString("<" + tag)
	if l.ordered && l.num != 1 {
		w.WriteString(` start="` + strconv.Itoa(l.num) + `"`)
	}
	w.WriteString(">\n")
	for _, item := range l.children {
		w.WriteString("<li>")
		if len(item.children) > 0 && (!l.tight || item.children[0].kind != kPara) {
			w.WriteByte('\n')
		}
		r.blocks(item.children, l.tight)
		w.WriteString("</li>\n")
	}
	w.WriteString("</" + tag + ">\n")
}

func (r *renderer) inlines(parent *inline) {
	w := &r.b
	for n := parent.first; n != nil; n = n.next {
		if r.full() {
			return
		}
		switch n.kind {
		case iText:
			r.escapeText(n.text)
		case iCode:
			if r.text {
				w.WriteString(n.text)
				continue
			}
			w.WriteString("<code>")
			escape(w, n.text)
			w.WriteString("</code>")
		case iSoftBreak:
			w.WriteByte('\n')
		case iHardBreak:
			if r.text {
				w.WriteByte(' ')
				continue
			}
			w.WriteString("<br>\n")
		case iEmph:
			r.wrapped(n, "em")
		case iStrong:
			r.wrapped(n, "strong")
		case iLink:
			r.link(n, n.dest, n.title)
		case iAutoLink:
			if !r.text {
				r.autolink(n)
			}
		}
	}
}

// wrapped renders n in tag; past maxDepth nested elements, as text
// only, so the page's tree stays shallow whatever the nesting.
func (r *renderer) wrapped(n *inline, tag string) {
	if r.text || r.depth >= maxDepth {
		r.inlines(n)
		return
	}
	r.depth++
	r.b.WriteString("<" + tag + ">")
	r.inlines(n)
	r.b.WriteString("</" + tag + ">")
	r.depth--
}

// link renders a link, or only its text when it goes anywhere but the
// web or sits in a link (an image's, which HTML does not nest).
func (r *renderer) link(n *inline, dest, title string) {
	href := escapeURL(dest)
	if r.text || r.inLink || r.depth >= maxDepth || !webURL(href) {
		r.inlines(n)
		return
	}
	r.depth++
	r.inLink = true
	defer func() { r.depth--; r.inLink = false }()
	w := &r.b
	w.WriteString(`<a href="`)
	escape(w, href)
	w.WriteByte('"')
	if title != "" {
		w.WriteString(` title="`)
		escape(w, title)
		w.WriteByte('"')
	}
	w.WriteString(` rel="` + LinkRel + `">`)
	r.inlines(n)
	w.WriteString("</a>")
}

func (r *renderer) autolink(n *inline) {
	href := escapeURL(n.dest)
	if r.inLink || !webURL(href) {
		escape(&r.b, n.text)
		return
	}
	r.b.WriteString(`<a href="`)
	escape(&r.b, href)
	r.b.WriteString(`" rel="` + LinkRel + `">`)
	escape(&r.b, n.text)
	r.b.WriteString("</a>")
}

func (r *renderer) escapeText(s string) {
	if r.text {
		r.b.WriteString(s)
		return
	}
	escape(&r.b, s)
}

// webURL says whether href, as written into the page, is an absolute
// http or https address.
func webURL(href string) bool {
	u, err := url.Parse(href)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// escapeURL percent-encodes what a URL may not hold as is, keeping
// what is already encoded.
func escapeURL(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c > ' ' && c < 0x7f && strings.IndexByte(`"<>\^`+"`{|}", c) < 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// escape writes s with HTML's special characters escaped.
func escape(w *strings.Builder, s string) {
	for {
		i := strings.IndexAny(s, `<>&"`)
		if i < 0 {
			w.WriteString(s)
			return
		}
		w.WriteString(s[:i])
		switch s[i] {
		case '<':
			w.WriteString("&lt;")
		case '>':
			w.WriteString("&gt;")
		case '&':
			w.WriteString("&amp;")
		case '"':
			w.WriteString("&quot;")
		}
		s = s[i+1:]
	}
}
