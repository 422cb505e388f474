package ui

import (
	"bytes"
	"html/template"
	"net/url"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// maxMarkdown bounds the description text rendered (catalogs carry
// megabyte descriptions).
const maxMarkdown = 20000

// md renders CommonMark without raw HTML (goldmark's default: it is
// replaced by a comment), with the page's own constraints applied to the
// tree first (see tidyMarkdown). Built at first use: every process
// links it, only serve's pages need it.
var md = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(tidyMarkdown{}, 100))))
})

// markdown renders a catalog's description as HTML. The result is safe
// to embed: no markup of the catalog passes through, only what goldmark
// builds from its text.
func markdown(src string) template.HTML {
	var b bytes.Buffer
	if err := md().Convert([]byte(shorten(src, maxMarkdown)), &b); err != nil {
		return template.HTML(template.HTMLEscapeString(shorten(src, 2000))) //nolint:gosec // escaped here
	}
	return template.HTML(b.String()) //nolint:gosec // goldmark escapes text and omits raw HTML
}

// markdownText is a description's text without its markup, cut to n
// bytes: what a list row shows.
func markdownText(src string, n int) string {
	s := []byte(shorten(src, maxMarkdown))
	doc := md().Parser().Parse(text.NewReader(s))
	var b strings.Builder
	_ = ast.Walk(doc, func(node ast.Node, entering bool) (ast.WalkStatus, error) {
		if b.Len() > n {
			return ast.WalkStop, nil
		}
		switch node := node.(type) {
		case *ast.Text:
			if entering {
				b.Write(node.Segment.Value(s))
				if node.SoftLineBreak() || node.HardLineBreak() {
					b.WriteByte(' ')
				}
			}
		case *ast.String:
			if entering {
				b.Write(node.Value)
			}
		default:
			if !entering && node.Type() == ast.TypeBlock && b.Len() > 0 {
				b.WriteByte(' ')
			}
		}
		return ast.WalkContinue, nil
	})
	return shorten(strings.Join(strings.Fields(b.String()), " "), n)
}

// tidyMarkdown fits a description into its page: headings start below
// the page's own (h3), links go only to the web and leave no referrer,
// and images (which the page's policy would block) become links.
type tidyMarkdown struct{}

func (tidyMarkdown) Transform(doc *ast.Document, _ text.Reader, _ parser.Context) {
	// Collected first: the tree is changed after the walk, not under it.
	var links, images []ast.Node
	_ = ast.Walk(doc, func(node ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := node.(type) {
		case *ast.Heading:
			n.Level = min(n.Level+2, 6)
		case *ast.Link:
			links = append(links, n)
		case *ast.AutoLink:
			if n.AutoLinkType == ast.AutoLinkURL {
				n.SetAttributeString("rel", []byte(linkRel))
			}
		case *ast.Image:
			images = append(images, n)
		}
		return ast.WalkContinue, nil
	})
	for _, n := range images {
		img := n.(*ast.Image)
		link := ast.NewLink()
		link.Destination, link.Title = img.Destination, img.Title
		moveChildren(img, link, nil)
		img.Parent().ReplaceChild(img.Parent(), img, link)
		links = append(links, link)
	}
	for _, n := range links {
		if webURL(n.(*ast.Link).Destination) {
			n.SetAttributeString("rel", []byte(linkRel))
			continue
		}
		// A link anywhere but the web shows as its text.
		parent := n.Parent()
		moveChildren(n, parent, n)
		parent.RemoveChild(parent, n)
	}
}

const linkRel = "nofollow noopener noreferrer"

// moveChildren moves from's children into to, before the child before
// (at the end when nil).
func moveChildren(from, to, before ast.Node) {
	for c := from.FirstChild(); c != nil; {
		next := c.NextSibling()
		if before != nil {
			to.InsertBefore(to, before, c)
		} else {
			to.AppendChild(to, c)
		}
		c = next
	}
}

func webURL(dest []byte) bool {
	u, err := url.Parse(string(dest))
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}
