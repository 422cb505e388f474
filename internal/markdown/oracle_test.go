package markdown

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/catalogsync/catalogsync/sync/fbc"
	"github.com/catalogsync/catalogsync/test/servers"
)

// maxDescription is what the pages render of a description.
const maxDescription = 20000

// descriptions are the distinct package and bundle (olm.csv.metadata)
// descriptions of the FBC catalogs under dirs.
func descriptions(t testing.TB, dirs ...string) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".json")) {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return fbc.Parse(f, func(o fbc.Object) error {
				var v struct {
					Description string
					Properties  []struct {
						Type  string
						Value json.RawMessage
					}
				}
				if json.Unmarshal(o.Blob, &v) != nil {
					return nil
				}
				found := []string{v.Description}
				for _, p := range v.Properties {
					var m struct{ Description string }
					if p.Type == "olm.csv.metadata" && json.Unmarshal(p.Value, &m) == nil {
						found = append(found, m.Description)
					}
				}
				for _, s := range found {
					if s != "" && !seen[s] {
						seen[s] = true
						out = append(out, shorten(s, maxDescription))
					}
				}
				return nil
			})
		})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
	}
	return out
}

// catalogDescriptions are the descriptions of the repository's test
// catalogs and, when it is there, of the shared community catalog.
func catalogDescriptions(t testing.TB) []string {
	dirs := []string{"../../testdata/fbc", "../../handlers/ui/testdata/edge-cases"}
	if shared := servers.SharedDir(); shared != "" {
		dirs = append(dirs, filepath.Join(shared, "testdata/fbc"))
	} else {
		t.Log("../shared is absent: only the repository's catalogs are compared")
	}
	return descriptions(t, dirs...)
}

// structure is what a rendering shows, element by element: headings,
// web links, list items, code blocks, quotes and breaks, each with its
// text with white space collapsed.
func structure(t *testing.T, page string) []string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "h1", "h2", "h3", "h4", "h5", "h6", "li", "blockquote", "hr", "ul", "ol", "p", "em", "strong":
				out = append(out, n.Data+" "+textOf(n))
			case "code":
				out = append(out, "code "+textOf(n))
			case "a":
				out = append(out, "a "+attr(n, "href")+" "+attr(n, "rel")+" "+textOf(n))
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// Over every description of the catalogs, the text and the structure
// rendered are goldmark's.
func TestCatalogDescriptionsAsGoldmark(t *testing.T) {
	ds := catalogDescriptions(t)
	if len(ds) < 10 {
		t.Fatalf("only %d descriptions found", len(ds))
	}
	textDiffs, htmlDiffs := 0, 0
	for i, d := range ds {
		// goldmark's text showed character references as written (its
		// Text nodes are the source's bytes); this package's decodes
		// them: both are compared decoded.
		if got, want := html.UnescapeString(Text(d, 1<<20)), html.UnescapeString(goldmarkText(d, 1<<20)); got != want {
			textDiffs++
			t.Errorf("description %d: text differs at %q\n got: %q\nwant: %q", i, firstLine(d), around(got, want), around(want, got))
		}
		got, want := structure(t, HTML(d)), known(structure(t, goldmarkHTML(d)))
		if !slices.Equal(got, want) {
			htmlDiffs++
			t.Errorf("description %d (%q): structure differs\n%s", i, firstLine(d), firstDiff(got, want))
		}
	}
	t.Logf("%d descriptions: %d texts and %d structures differ", len(ds), textDiffs, htmlDiffs)
}

// known takes out of goldmark's structure what this package renders
// differently on purpose:
//   - an e-mail autolink (<name@example.com>) is text: links go only to
//     the web, as the pages' other links do.
//
// Other differences by design, which no catalog shows (each has a case
// in TestConstructsRender or TestHostileInputLinearAndSafe): named
// character references outside the common ones stay as written; a link
// whose destination and title pass maxLinkTail bytes, or a tag past
// maxTag, stays text; quotes, lists and inline elements nest at most
// maxDepth deep; a link inside an image's link is its text; raw HTML
// leaves nothing, not goldmark's "<!-- raw HTML omitted -->".
func known(want []string) []string {
	return slices.DeleteFunc(want, func(e string) bool { return strings.HasPrefix(e, "a mailto:") })
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return shorten(s, 60)
}

// around is a from where it first differs from b.
func around(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return shorten(a[max(0, i-40):], 120)
}

func firstDiff(got, want []string) string {
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return " got: " + shorten(g, 200) + "\nwant: " + shorten(w, 200)
		}
	}
	return ""
}
