package markdown

import (
	"strings"
	"testing"
)

const rel = ` rel="nofollow noopener noreferrer"`

// Each construct descriptions use renders as CommonMark says, with the
// pages' constraints.
func TestConstructsRender(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"ATX headings start at h3", "# A\n## B ##\n###### F", "<h3>A</h3>\n<h4>B</h4>\n<h6>F</h6>\n"},
		{"setext headings", "A\n===\nB\n---", "<h3>A</h3>\n<h4>B</h4>\n"},
		{"paragraphs", "a\nb\n\nc", "<p>a\nb</p>\n<p>c</p>\n"},
		{"emphasis and strong", "*a* _b_ **c** __d__ ***e***", "<p><em>a</em> <em>b</em> <strong>c</strong> <strong>d</strong> <em><strong>e</strong></em></p>\n"},
		{"intraword underscores stay", "snake_case_name and 2*3*4", "<p>snake_case_name and 2<em>3</em>4</p>\n"},
		{"unmatched delimiters stay text", "**a *b", "<p>**a *b</p>\n"},
		{"code spans", "`a <b>` `` c`d `` ` e `", "<p><code>a &lt;b&gt;</code> <code>c`d</code> <code>e</code></p>\n"},
		{"fenced code", "```go\nx := 1 < 2\n```\n~~~\nt\n~~~", "<pre><code class=\"language-go\">x := 1 &lt; 2\n</code></pre>\n<pre><code>t\n</code></pre>\n"},
		{"unclosed fence runs to the end", "```\na\n\nb", "<pre><code>a\n\nb\n</code></pre>\n"},
		{"indented code", "    a\n\n    b\n\nc", "<pre><code>a\n\nb\n</code></pre>\n<p>c</p>\n"},
		{"bullet list, tight", "- a\n- b\n* c", "<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n<ul>\n<li>c</li>\n</ul>\n"},
		{"ordered list with start", "3. a\n4. b", "<ol start=\"3\">\n<li>a</li>\n<li>b</li>\n</ol>\n"},
		{"loose list", "- a\n\n- b", "<ul>\n<li>\n<p>a</p>\n</li>\n<li>\n<p>b</p>\n</li>\n</ul>\n"},
		{"nested lists", "- a\n  1. b\n     - c", "<ul>\n<li>a\n<ol>\n<li>b\n<ul>\n<li>c</li>\n</ul>\n</li>\n</ol>\n</li>\n</ul>\n"},
		{"block quote, lazy line", "> a\nb\n> > c", "<blockquote>\n<p>a\nb</p>\n<blockquote>\n<p>c</p>\n</blockquote>\n</blockquote>\n"},
		{"thematic breaks", "***\n- - -\n___", "<hr>\n<hr>\n<hr>\n"},
		{"hard breaks", "a  \nb\\\nc", "<p>a<br>\nb<br>\nc</p>\n"},
		{"inline link with title", `[a *b*](https://x.example.com/p?q=1&r=2 "T")`, `<p><a href="https://x.example.com/p?q=1&amp;r=2" title="T"` + rel + `>a <em>b</em></a></p>` + "\n"},
		{"link destination in angle brackets", "[a](<https://x.example.com/a b>)", `<p><a href="https://x.example.com/a%20b"` + rel + ">a</a></p>\n"},
		{"autolink", "<https://x.example.com>", `<p><a href="https://x.example.com"` + rel + ">https://x.example.com</a></p>\n"},
		{"e-mail autolink is text", "<a@example.com>", "<p>a@example.com</p>\n"},
		{"reference links", "[a] [b][a] [a][]\n\n[a]: https://x.example.com 'T'", `<p><a href="https://x.example.com" title="T"` + rel + `>a</a> <a href="https://x.example.com" title="T"` + rel + `>b</a> <a href="https://x.example.com" title="T"` + rel + ">a</a></p>\n"},
		{"image becomes a link", "![logo](https://x.example.com/l.png)", `<p><a href="https://x.example.com/l.png"` + rel + ">logo</a></p>\n"},
		{"link to anything but the web is text", "[a](/rel) [b](mailto:x@example.com) [c](ftp://x.example.com)", "<p>a b c</p>\n"},
		{"no link inside a link", "[a [b](https://b.example.com)](https://a.example.com)", `<p>[a <a href="https://b.example.com"` + rel + ">b</a>](https://a.example.com)</p>\n"},
		{"an image's link holds no link", "![[a](https://a.example.com)](https://i.example.com)", `<p><a href="https://i.example.com"` + rel + ">a</a></p>\n"},
		{"a link of 3,000 bytes is text", "[a](https://x.example.com/" + strings.Repeat("b", 3000) + ")", "<p>[a](https://x.example.com/" + strings.Repeat("b", 3000) + ")</p>\n"},
		{"a tag of 1,100 bytes is text", "<b x=\"" + strings.Repeat("y", 1100) + "\">", "<p>&lt;b x=&quot;" + strings.Repeat("y", 1100) + "&quot;&gt;</p>\n"},
		{"entities", "&amp; &lt; &gt; &quot; &#65; &#x42; &nbsp; &copy; &bogus; &#0;", "<p>&amp; &lt; &gt; &quot; A B \u00a0 © &amp;bogus; \uFFFD</p>\n"},
		{"backslash escapes", `\*a\* \[b\] \\ \q`, `<p>*a* [b] \ \q</p>` + "\n"},
		{"raw HTML is dropped", "a <b onclick=\"x\">b</b> <!-- c --> d", "<p>a b  d</p>\n"},
		{"HTML blocks are dropped", "<div>\n*a*\n</div>\n\n<script>\nx\n</script>\nb", "<p>b</p>\n"},
		{"a tag that is not HTML is text", "a < b > c <3", "<p>a &lt; b &gt; c &lt;3</p>\n"},
		{"tables stay text", "| a | b |\n|---|---|\n| 1 | 2 |", "<p>| a | b |\n|---|---|\n| 1 | 2 |</p>\n"},
		{"tabs indent", "\tcode\n\n- a\n\n\t\tb", "<pre><code>code\n</code></pre>\n<ul>\n<li>\n<p>a</p>\n<pre><code>  b\n</code></pre>\n</li>\n</ul>\n"},
		{"CRLF lines", "# a\r\nb\r\nc", "<h3>a</h3>\n<p>b\nc</p>\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := HTML(c.src); got != c.want {
				t.Errorf("HTML(%q)\n got %q\nwant %q", c.src, got, c.want)
			}
		})
	}
}

func TestTextDropsMarkupCodeBlocksAndAutolinks(t *testing.T) {
	for _, c := range []struct {
		src  string
		n    int
		want string
	}{
		{"# Title\n\nSome **bold** `code` [link](https://x.example.com) &amp; <b>raw</b>", 100, "Title Some bold code link & raw"},
		{"a\n\n```\nhidden\n```\n\n<https://x.example.com> b", 100, "a b"},
		{"- one\n- two\n\n> three", 100, "one two three"},
		{"héllo wörld", 3, "hé…"},
		{"abcdef", 4, "abcd…"},
	} {
		if got := Text(c.src, c.n); got != c.want {
			t.Errorf("Text(%q, %d) = %q, want %q", c.src, c.n, got, c.want)
		}
	}
}
