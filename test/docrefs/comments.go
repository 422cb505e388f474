package docrefs

import (
	"fmt"
	"go/doc/comment"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// link is a doc link found in a comment.
type link struct {
	at   string // file:line
	text string
	dl   *comment.DocLink
}

// qualified is pkg.Name or pkg.Type.Name in plain text, pkg a name or an
// import path.
// A name followed by "*" stands for several (webhook.Outcome*) and is
// not checked.
var qualified = regexp.MustCompile(`(?:^|[^\w./\[])\*?((?:[a-z][\w.-]*/)*[a-z]\w*)\.([A-Z]\w*(?:\.[A-Z]\w*)?)(?:$|[^\w*])`)

// unresolved is a doc link whose package no import names: gopls and
// pkgsite show it as plain text.
var unresolved = regexp.MustCompile(`\[\*?([a-z]\w*)\.([A-Z]\w*)(?:\.(\w+))?\]`)

// found is what the doc comments of the module hold.
type found struct {
	links    []link
	mentions []mention
	problems []string
}

// GoProblems lists the doc links of the module's doc comments that name
// nothing, doc links that are none because no import has their package's
// name, and qualified identifiers in plain text that no package of that
// name declares.
func (c *Checker) GoProblems() ([]string, error) {
	var fd found
	for ip, pk := range c.pkgs {
		for _, f := range pk.files {
			c.scan(&fd, ip, pk, f)
		}
	}
	var paths []string
	for _, l := range fd.links {
		paths = append(paths, l.dl.ImportPath)
	}
	for _, m := range fd.mentions {
		paths = append(paths, m.paths...)
	}
	if err := c.load(paths); err != nil {
		return nil, err
	}
	problems := fd.problems
	for _, l := range fd.links {
		if why := c.resolve(l.dl); why != "" {
			problems = append(problems, fmt.Sprintf("%s: [%s]: %s", l.at, l.text, why))
		}
	}
	problems = append(problems, c.unknown(fd.mentions, "%s: %s: %s declares no %s")...)
	slices.Sort(problems)
	return slices.Compact(problems), nil
}

// scan collects the links and mentions of f's doc comments. A link's
// package is looked up in f's imports, as gopls does (pkgsite takes any
// file's), or is pk itself.
func (c *Checker) scan(fd *found, ip string, pk *pkg, f *file) {
	p := &comment.Parser{
		LookupPackage: func(name string) (string, bool) {
			if name == pk.name {
				return ip, true
			}
			path, ok := f.imports[name]
			return path, ok
		},
		// Every [Name] and [Type.Name] is taken as a link, to be checked:
		// gopls and pkgsite show one that names nothing as plain text.
		LookupSym: func(string, string) bool { return true },
	}
	for _, cg := range f.docs {
		if cg == nil {
			continue
		}
		at := pk.fset.Position(cg.Pos()).String()
		if rel, err := filepath.Rel(c.root, at); err == nil {
			at = rel
		}
		walkText(p.Parse(cg.Text()), func(t comment.Text) {
			switch t := t.(type) {
			case *comment.DocLink:
				if t.ImportPath == "" {
					t.ImportPath = ip
				}
				fd.links = append(fd.links, link{at: at, text: textOf(t.Text), dl: t})
			case comment.Plain:
				for _, m := range unresolved.FindAllStringSubmatch(string(t), -1) {
					fd.problems = append(fd.problems, fmt.Sprintf("%s: %s: no import is named %s", at, m[0], m[1]))
				}
				for _, m := range qualified.FindAllStringSubmatch(unresolved.ReplaceAllString(string(t), ""), -1) {
					if paths := c.pathsNamed(f, m[1]); len(paths) > 0 {
						fd.mentions = append(fd.mentions, mention{at: at, text: m[1] + "." + m[2], paths: paths, sym: m[2]})
					}
				}
			}
		})
	}
}

// resolve says why dl names nothing, or "".
func (c *Checker) resolve(dl *comment.DocLink) string {
	pk, ok := c.pkgs[dl.ImportPath]
	switch {
	case !ok:
		return "no package " + dl.ImportPath
	case dl.Name == "":
		return ""
	case dl.Recv != "" && !pk.syms[dl.Recv+"."+dl.Name]:
		return fmt.Sprintf("%s has no %s.%s", dl.ImportPath, dl.Recv, dl.Name)
	case dl.Recv == "" && !pk.syms[dl.Name]:
		return fmt.Sprintf("%s has no %s", dl.ImportPath, dl.Name)
	}
	return ""
}

func textOf(ts []comment.Text) string {
	var b strings.Builder
	for _, t := range ts {
		if p, ok := t.(comment.Plain); ok {
			b.WriteString(string(p))
		}
	}
	return b.String()
}

// walkText calls f for every text element of d outside code blocks.
func walkText(d *comment.Doc, f func(comment.Text)) {
	var blocks func([]comment.Block)
	var texts func([]comment.Text)
	texts = func(ts []comment.Text) {
		for _, t := range ts {
			f(t)
			if l, ok := t.(*comment.Link); ok {
				texts(l.Text)
			}
		}
	}
	blocks = func(bs []comment.Block) {
		for _, b := range bs {
			switch b := b.(type) {
			case *comment.Paragraph:
				texts(b.Text)
			case *comment.Heading:
				texts(b.Text)
			case *comment.List:
				for _, it := range b.Items {
					blocks(it.Content)
				}
			}
		}
	}
	blocks(d.Content)
}
