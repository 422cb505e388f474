package markdown

import (
	"bytes"
	"net/url"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// goldmark, as the pages used it before this package, is the tests'
// oracle: CommonMark with the same constraints applied to its tree.
var gm = goldmark.New(goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(tidy{}, 100))))

func goldmarkHTML(src string) string {
	var b bytes.Buffer
	if err := gm.Convert([]byte(src), &b); err != nil {
		return err.Error()
	}
	return b.String()
}

// goldmarkText is the text the pages showed: Text and String nodes, a
// space after each line and block.
func goldmarkText(src string, n int) string {
	s := []byte(src)
	doc := gm.Parser().Parse(text.NewReader(s))
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

// tidy shifts headings by two, keeps only web links (with LinkRel) and
// turns images into links.
type tidy struct{}

func (tidy) Transform(doc *ast.Document, _ text.Reader, _ parser.Context) {
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
				n.SetAttributeString("rel", []byte(LinkRel))
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
		if u, err := url.Parse(string(n.(*ast.Link).Destination)); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
			n.SetAttributeString("rel", []byte(LinkRel))
			continue
		}
		parent := n.Parent()
		moveChildren(n, parent, n)
		parent.RemoveChild(parent, n)
	}
}

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
