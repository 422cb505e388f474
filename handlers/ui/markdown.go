package ui

import (
	"html/template"

	md "github.com/catalogsync/catalogsync/internal/markdown"
)

// maxMarkdown bounds the description text rendered (catalogs carry
// megabyte descriptions).
const maxMarkdown = 20000

// markdown renders a catalog's description as HTML. The result is safe
// to embed: no markup of the catalog passes through, only what
// internal/markdown builds from its text.
func markdown(src string) template.HTML {
	return template.HTML(md.HTML(shorten(src, maxMarkdown))) //nolint:gosec // internal/markdown escapes text and drops raw HTML
}

// markdownText is a description's text without its markup, cut to n
// bytes: what a list row shows.
func markdownText(src string, n int) string {
	return md.Text(shorten(src, maxMarkdown), n)
}
