// Package docs_test checks the project's Markdown documents as a reader
// meets them: every relative link leads to a file (and heading) that
// exists, and each document stays a length a user reads.
package docs_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// Line budgets: the README is a first screen, a doc one topic.
// docs/notes/ is kept for the curious and has none.
const (
	readmeLines = 150
	docLines    = 250
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// markdownFiles lists every .md file of the repository, relative to root.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestDocsFitTheirLineBudget(t *testing.T) {
	root := repoRoot(t)
	budgets := map[string]int{"README.md": readmeLines}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		budgets["docs/"+filepath.Base(d)] = docLines
	}
	for name, limit := range budgets {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); n > limit {
			t.Errorf("%s has %d lines, its budget is %d", name, n, limit)
		}
	}
}

var (
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	refLink    = regexp.MustCompile(`^\s*\[[^\]]+\]:\s*(\S+)`)
	inlineCode = regexp.MustCompile("`[^`]*`")
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// doc is what a link into a Markdown file can point at.
type doc struct {
	links   []link
	anchors map[string]bool
}

type link struct {
	line   int
	target string
}

func readDoc(t *testing.T, path string) doc {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := doc{anchors: map[string]bool{}}
	seen := map[string]int{}
	fence := ""
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			d.anchors[m[1]] = true
		}
		if strings.HasPrefix(line, "#") {
			slug := headingSlug(strings.TrimLeft(line, "#"))
			if k := seen[slug]; k > 0 {
				d.anchors[fmt.Sprintf("%s-%d", slug, k)] = true
			} else {
				d.anchors[slug] = true
			}
			seen[slug]++
		}
		text := inlineCode.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			d.links = append(d.links, link{n, m[1]})
		}
		if m := refLink.FindStringSubmatch(text); m != nil {
			d.links = append(d.links, link{n, m[1]})
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return d
}

// headingSlug is the anchor GitHub gives a heading: lower case, spaces as
// hyphens, punctuation other than hyphens and underscores dropped.
func headingSlug(h string) string {
	h = inlineCode.ReplaceAllStringFunc(strings.TrimSpace(h), func(c string) string { return strings.Trim(c, "`") })
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestRelativeLinksResolve(t *testing.T) {
	root := repoRoot(t)
	docs := map[string]doc{}
	load := func(rel string) doc {
		d, ok := docs[rel]
		if !ok {
			d = readDoc(t, filepath.Join(root, rel))
			docs[rel] = d
		}
		return d
	}
	for _, name := range markdownFiles(t, root) {
		for _, l := range load(name).links {
			if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(l.target, "#")
			target := name
			if file != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(name), file))
				if _, err := os.Stat(filepath.Join(root, target)); err != nil {
					t.Errorf("%s:%d: link to %s: no such file", name, l.line, l.target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(target, ".md") && !load(target).anchors[anchor] {
				t.Errorf("%s:%d: link to %s: %s has no heading #%s", name, l.line, l.target, target, anchor)
			}
		}
	}
}

func TestHeadingSlug(t *testing.T) {
	for in, want := range map[string]string{
		" Speed on the 220 MB catalog":     "speed-on-the-220-mb-catalog",
		" `catalogsync sync` — exit codes": "catalogsync-sync--exit-codes",
		" Harbor (JSON, CloudEvents)":      "harbor-json-cloudevents",
		" snake_case and 1.2.3":            "snake_case-and-123",
	} {
		if got := headingSlug(in); got != want {
			t.Errorf("headingSlug(%q) = %q, want %q", in, got, want)
		}
	}
}
