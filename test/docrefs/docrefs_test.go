package docrefs

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/catalogsync/catalogsync"

// repo reads the module's packages once for the tests that need them.
var repo = sync.OnceValues(func() (*Checker, error) { return New(filepath.Join("..", ".."), module) })

// Every doc link in the module's doc comments, and every qualified
// identifier in their text, names a package, type, function, method or
// field that exists.
func TestDocLinksResolve(t *testing.T) {
	skipShort(t)
	c, err := repo()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := c.GoProblems()
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Errorf("doc comments that name what does not exist:\n%s", strings.Join(problems, "\n"))
	}
}

// The Go identifiers and the repository paths the docs name in code spans
// exist.
func TestDocsNameWhatExists(t *testing.T) {
	skipShort(t)
	c, err := repo()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join("..", "..")
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	problems, err := c.MarkdownProblems(append(docs, filepath.Join(root, "README.md")))
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Errorf("docs name what does not exist:\n%s", strings.Join(problems, "\n"))
	}
}

// The checker reports exactly the stale references of a module written
// to hold both kinds.
func TestCheckerFindsStaleReferences(t *testing.T) {
	root := filepath.Join("testdata", "stale")
	c, err := New(root, "example.test/stale")
	if err != nil {
		t.Fatal(err)
	}
	goProblems, err := c.GoProblems()
	if err != nil {
		t.Fatal(err)
	}
	mdProblems, err := c.MarkdownProblems([]string{filepath.Join(root, "doc.md")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"a/a.go:7:1: [Gone]: example.test/stale/a has no Gone",
		"a/a.go:7:1: [Here.Gone]: example.test/stale/a has no Here.Gone",
		"a/a.go:16:1: [nosuch.Thing]: no import is named nosuch",
		"a/a.go:16:1: [strings.NoSuch]: strings has no NoSuch",
		"a/a.go:16:1: strings.Nope: strings declares no Nope",
		"doc.md:3: `a.Gone`: example.test/stale/a declares no Gone",
		"doc.md:4: `a/missing.go`: no such file or folder",
	}
	got := append(goProblems, mdProblems...)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// skipShort keeps the type-check of the whole module (4 s here, quiet)
// out of the unit tier; test/run.sh runs it.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: type-checking the whole module runs in the full suite (test/run.sh)")
	}
}
