package ui

import (
	"html"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
)

// edgeCatalog is the testdata catalog of the graph and naming edge cases
// (see testdata/edge-cases/README.md).
func edgeCatalog(t testing.TB) string {
	return filepath.Join(repoRoot(t), "handlers/ui/testdata/edge-cases/configs")
}

var (
	reBundleLink = regexp.MustCompile(`<a (?:class="[^"]*" )?href="([^"]*/bundles/[^"]*)"[^>]*>([^<]*)</a>`)
	reH1         = regexp.MustCompile(`<h1><span class="trunc">([^<]*)</span></h1>`)
)

// Every bundle link of a package page leads, resolved as a browser
// resolves it, to that bundle's page: names with "%", "..", right-to-left
// script and hundreds of characters included.
func TestBundleLinksOfOddNames(t *testing.T) {
	if testing.Short() {
		t.Skip("syncs a catalog through the pipeline")
	}
	store := newStore(t)
	syncDir(t, store, "edge", edgeCatalog(t))
	srv := startServer(t, store, engine.StaticCatalogs{{Name: "edge", Image: catalogspec.ParseImage("example.test/edge:v1")}}, nil)
	page, err := url.Parse(srv.URL + packageURL("edge", "odd-names"))
	if err != nil {
		t.Fatal(err)
	}
	resp, body := get(t, page.String())
	if resp.StatusCode != 200 {
		t.Fatalf("package page: %d", resp.StatusCode)
	}
	links := reBundleLink.FindAllStringSubmatch(body, -1)
	if len(links) != 5 {
		t.Fatalf("%d bundle links, want 5", len(links))
	}
	for _, l := range links {
		ref, err := url.Parse(html.UnescapeString(l[1]))
		if err != nil {
			t.Errorf("link %q: %v", l[1], err)
			continue
		}
		target := page.ResolveReference(ref)
		resp, body := get(t, target.String())
		h1 := ""
		if m := reH1.FindStringSubmatch(body); m != nil {
			h1 = html.UnescapeString(m[1])
		}
		if name := html.UnescapeString(l[2]); resp.StatusCode != 200 || !strings.HasPrefix(h1, strings.TrimSuffix(name, "…")) {
			t.Errorf("link to %.40q -> %.80s: %d, page of %.40q", name, target.Path, resp.StatusCode, h1)
		}
	}
}
