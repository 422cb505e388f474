package ui

import (
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
)

func TestMarkdownRendersNoCatalogMarkup(t *testing.T) {
	src := "# Title\n\nSome **bold** [web](https://example.test/a) [js](javascript:alert(1)) [rel](../../x)\n\n" +
		"![logo](https://example.test/logo.png) ![local](data:image/png;base64,AAAA)\n\n" +
		"<script>alert(1)</script>\n\n<b onclick=\"alert(1)\">raw</b>\n\n<https://example.test/auto>\n"
	got := string(markdown(src))
	for _, want := range []string{"<h3>Title</h3>", "<strong>bold</strong>",
		`<a href="https://example.test/a" rel="nofollow noopener noreferrer">web</a>`,
		`<a href="https://example.test/logo.png" rel="nofollow noopener noreferrer">logo</a>`,
		`<a href="https://example.test/auto" rel="nofollow noopener noreferrer">`} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s in\n%s", want, got)
		}
	}
	for _, bad := range []string{"<script", "onclick", "javascript:", "<img", "data:", "<b ", `href="../`} {
		if strings.Contains(got, bad) {
			t.Errorf("%s in\n%s", bad, got)
		}
	}
	if txt := markdownText(src, 40); txt != "Title Some bold web js rel logo local…" && !strings.HasPrefix(txt, "Title Some bold web js rel") {
		t.Errorf("text %q", txt)
	}
	if n := len(markdown(strings.Repeat("*a* ", 1<<20))); n > 4*maxMarkdown {
		t.Errorf("a 4 MB description rendered to %d bytes", n)
	}
}

// A description's Markdown is rendered on the package page and a bundle's
// CSV description on its page, as HTML internal/markdown builds: none of the
// catalog's own markup comes through.
func TestDescriptionsRenderedAsMarkdown(t *testing.T) {
	if testing.Short() {
		t.Skip("syncs a catalog through the pipeline")
	}
	store := newStore(t)
	syncDir(t, store, "edge", edgeCatalog(t))
	srv := startServer(t, store, engine.StaticCatalogs{{Name: "edge", Image: catalogspec.ParseImage("example.test/edge:v1")}}, nil)
	for _, p := range []string{packageURL("edge", "markdown-description"), bundleURL("edge", "markdown-description", "markdown-description.v1.0.0")} {
		resp, body := get(t, srv.URL+p)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
		for _, want := range []string{"<h3>Markdown Operator</h3>", "<strong>widgets</strong>", "<code>widget</code>",
			`<a href="https://example.test/docs" rel="nofollow noopener noreferrer">safely</a>`} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: no %s", p, want)
			}
		}
		for _, bad := range []string{"# Markdown", "**widgets**", "window.__pwned", "onclick"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s: %q shown", p, bad)
			}
		}
	}
	// The catalog page lists the text, without its markup.
	_, body := get(t, srv.URL+catalogURL("edge"))
	if !strings.Contains(body, "Markdown Operator Manages widgets and gadgets") {
		t.Errorf("catalog page: description row not the Markdown's text")
	}
}
