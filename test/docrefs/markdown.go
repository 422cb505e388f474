package docrefs

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

var (
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	// identSpan is `pkg.Name`, `*pkg.Type`, `pkg.Type.Method()`.
	identSpan = regexp.MustCompile(`^\*?((?:[a-z][\w.-]*/)*[a-z]\w*)\.([A-Z]\w*(?:\.[A-Z]\w*)?)(?:\(\))?$`)
	// pathSpan is a relative path of two elements or more.
	pathSpan = regexp.MustCompile(`^[\w.-]+(?:/[\w.*-]+)+/?$`)
)

// MarkdownProblems lists the code spans of Markdown files (fenced blocks
// left out) that name a Go identifier no package of that name declares,
// or a path under a top folder of the module's packages that does not
// exist.
func (c *Checker) MarkdownProblems(files []string) ([]string, error) {
	noImports := &file{}
	var problems []string
	var mentions []mention
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(c.root, name)
		for i, line := range inlineLines(string(b)) {
			at := fmt.Sprintf("%s:%d", rel, i+1)
			for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
				span := m[1]
				if id := identSpan.FindStringSubmatch(span); id != nil {
					if paths := c.pathsNamed(noImports, id[1]); len(paths) > 0 {
						mentions = append(mentions, mention{at: at, text: span, paths: paths, sym: id[2]})
					}
				} else if why := c.pathProblem(span); why != "" {
					problems = append(problems, fmt.Sprintf("%s: `%s`: %s", at, span, why))
				}
			}
		}
	}
	var paths []string
	for _, m := range mentions {
		paths = append(paths, m.paths...)
	}
	if err := c.load(paths); err != nil {
		return nil, err
	}
	problems = append(problems, c.unknown(mentions, "%s: `%s`: %s declares no %s")...)
	return problems, nil
}

// pathProblem says why span, a path under a top folder of the module's
// packages, names nothing; "" when it exists or is no such path.
func (c *Checker) pathProblem(span string) string {
	if !pathSpan.MatchString(span) {
		return ""
	}
	top, _, _ := strings.Cut(span, "/")
	if !slices.ContainsFunc(slices.Collect(maps.Keys(c.pkgs)), func(ip string) bool {
		return strings.HasPrefix(ip, c.module+"/"+top+"/") || ip == c.module+"/"+top
	}) {
		return "" // not a folder of Go packages: testdata/fuzz is any package's
	}
	matches, err := filepath.Glob(filepath.Join(c.root, filepath.FromSlash(strings.TrimSuffix(span, "/"))))
	if err != nil || len(matches) == 0 {
		return "no such file or folder"
	}
	return ""
}

// inlineLines returns the lines of a Markdown text, those of fenced code
// blocks blanked, so line numbers stay.
func inlineLines(s string) []string {
	lines := strings.Split(s, "\n")
	fence := ""
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			fence = t[:3]
			lines[i] = ""
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			lines[i] = ""
		}
	}
	return lines
}
