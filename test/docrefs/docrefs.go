// Package docrefs finds references that name what does not exist: doc
// links in Go doc comments that gopls and pkgsite cannot resolve,
// qualified identifiers in doc comments' text that no package declares,
// and Go identifiers and repository paths named in backticks in Markdown
// docs.
//
// A doc link is one of
//
//	[Name] [Type.Method] [pkg] [pkg.Name] [pkg.Type.Method]
//
// where pkg is a name the package's files import (or its own name), or a
// standard library path of one element.
package docrefs

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// pkg is what a link may name in one package.
type pkg struct {
	name string
	// syms holds "Name" for top-level declarations and "Type.Name" for
	// methods, struct fields and interface methods.
	syms  map[string]bool
	files []*file // nil outside the module: only what it declares matters
	fset  *token.FileSet
}

// file is one of the module's files: its doc comments and what its
// imports are named, the names its doc links may use.
type file struct {
	imports map[string]string // name (or "\x00"+path until named) -> path
	docs    []*ast.CommentGroup
}

// Checker reads one module's packages, and others' as links need them.
type Checker struct {
	root, module string
	pkgs         map[string]*pkg // by import path
	dirs         map[string]string
}

// New reads the packages of the module at root (testdata, hidden folders
// and test files left out).
func New(root, module string) (*Checker, error) {
	c := &Checker{root: root, module: module, pkgs: map[string]*pkg{}, dirs: map[string]string{}}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" || n == "node_modules") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, p)
		ip := module
		if rel != "." {
			ip = path.Join(module, filepath.ToSlash(rel))
		}
		files, _ := filepath.Glob(filepath.Join(p, "*.go"))
		files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
		if len(files) == 0 {
			return nil
		}
		pk, err := parsePkg(files)
		if err != nil {
			return err
		}
		c.pkgs[ip] = pk
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, c.loadImports()
}

// parsePkg reads the declarations, imports and doc comments of files.
func parsePkg(files []string) (*pkg, error) {
	pk := &pkg{syms: map[string]bool{}, fset: token.NewFileSet()}
	for _, f := range files {
		af, err := parser.ParseFile(pk.fset, f, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		pk.name = af.Name.Name
		addDecls(pk, af)
	}
	return pk, nil
}

func addDecls(pk *pkg, af *ast.File) {
	f := &file{imports: map[string]string{}, docs: []*ast.CommentGroup{af.Doc}}
	pk.files = append(pk.files, f)
	for _, d := range af.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			f.docs = append(f.docs, d.Doc)
			if d.Recv == nil {
				pk.syms[d.Name.Name] = true
			} else {
				pk.syms[recvName(d.Recv.List[0].Type)+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			f.docs = append(f.docs, d.Doc)
			addSpecs(pk, f, d.Specs)
		}
	}
}

func addSpecs(pk *pkg, f *file, specs []ast.Spec) {
	for _, s := range specs {
		switch s := s.(type) {
		case *ast.ImportSpec:
			p := strings.Trim(s.Path.Value, `"`)
			name := "" // filled in by loadImports
			if s.Name != nil {
				name = s.Name.Name
			}
			f.imports["\x00"+p] = name
		case *ast.TypeSpec:
			f.docs = append(f.docs, s.Doc)
			pk.syms[s.Name.Name] = true
			addMembers(pk, f, s.Name.Name, s.Type)
		case *ast.ValueSpec:
			f.docs = append(f.docs, s.Doc)
			for _, n := range s.Names {
				pk.syms[n.Name] = true
			}
		}
	}
}

// addMembers records the fields of a struct and the methods of an
// interface type.
func addMembers(pk *pkg, f *file, typ string, t ast.Expr) {
	var fields *ast.FieldList
	switch t := t.(type) {
	case *ast.StructType:
		fields = t.Fields
	case *ast.InterfaceType:
		fields = t.Methods
	default:
		return
	}
	for _, fd := range fields.List {
		f.docs = append(f.docs, fd.Doc)
		for _, n := range fd.Names {
			pk.syms[typ+"."+n.Name] = true
		}
		if len(fd.Names) == 0 { // embedded
			pk.syms[typ+"."+recvName(fd.Type)] = true
		}
	}
}

// recvName is the type name of a receiver or embedded field.
func recvName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvName(e.X)
	case *ast.IndexExpr:
		return recvName(e.X)
	case *ast.IndexListExpr:
		return recvName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// loadImports names every import of the module's packages, reading the
// imported packages outside the module with go list.
func (c *Checker) loadImports() error {
	var paths []string
	for _, pk := range c.pkgs {
		for _, f := range pk.files {
			for k := range f.imports {
				if p := k[1:]; c.pkgs[p] == nil && !slices.Contains(paths, p) && p != "C" {
					paths = append(paths, p)
				}
			}
		}
	}
	if err := c.goList(paths); err != nil {
		return err
	}
	for _, pk := range c.pkgs {
		for _, f := range pk.files {
			named := map[string]string{}
			for k, name := range f.imports {
				if ip := c.pkgs[k[1:]]; name == "" && ip != nil {
					name = ip.name
				}
				if name != "" && name != "_" && name != "." {
					named[name] = k[1:]
				}
			}
			f.imports = named
		}
	}
	return nil
}

// goList reads the packages at import paths outside the module.
func (c *Checker) goList(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	args := append([]string{"list", "-e", "-find", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \"\\t\"}}"}, paths...)
	cmd := exec.Command("go", args...)
	cmd.Dir = c.root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go list: %w: %s", err, stderr.Bytes())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 3 || f[1] == "" {
			continue
		}
		var files []string
		for _, g := range f[2:] {
			files = append(files, filepath.Join(f[1], g))
		}
		pk, err := parsePkg(files)
		if err != nil {
			return err
		}
		pk.files = nil // only what it declares matters
		c.pkgs[f[0]] = pk
	}
	return sc.Err()
}

// link is a doc link found in a comment.
type link struct {
	at   string // file:line
	text string
	dl   *comment.DocLink
}

// mention is a qualified identifier in a comment's plain text.
type mention struct {
	at, text string
	paths    []string // the packages its qualifier may name
	sym      string   // Name or Type.Name
}

// qualified is pkg.Name or pkg.Type.Name in plain text, pkg a name or an
// import path.
// A name followed by "*" stands for several (webhook.Outcome*) and is
// not checked.
var qualified = regexp.MustCompile(`(?:^|[^\w./\[])\*?((?:[a-z][\w.-]*/)*[a-z]\w*)\.([A-Z]\w*(?:\.[A-Z]\w*)?)(?:$|[^\w*])`)

// pathsNamed returns the packages a qualifier in f's comments may name:
// an import path (or one relative to the module's), the import of that
// name, else the module's packages of that name, else
// a standard library package of one element.
func (c *Checker) pathsNamed(f *file, name string) []string {
	if strings.Contains(name, "/") {
		if c.pkgs[c.module+"/"+name] != nil {
			return []string{c.module + "/" + name} // a path in the module
		}
		return []string{name}
	}
	if p, ok := f.imports[name]; ok {
		return []string{p}
	}
	var paths []string
	for ip, pk := range c.pkgs {
		if pk.files != nil && pk.name == name {
			paths = append(paths, ip)
		}
	}
	if p, ok := comment.DefaultLookupPackage(name); ok && len(paths) == 0 {
		paths = append(paths, p)
	}
	return paths
}

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
	var missing []string
	need := func(p string) {
		if c.pkgs[p] == nil && !slices.Contains(missing, p) {
			missing = append(missing, p)
		}
	}
	for _, l := range fd.links {
		need(l.dl.ImportPath)
	}
	for _, m := range fd.mentions {
		for _, p := range m.paths {
			need(p)
		}
	}
	if err := c.goList(missing); err != nil {
		return nil, err
	}
	problems := fd.problems
	for _, l := range fd.links {
		if why := c.resolve(l.dl); why != "" {
			problems = append(problems, fmt.Sprintf("%s: [%s]: %s", l.at, l.text, why))
		}
	}
	for _, m := range fd.mentions {
		if !slices.ContainsFunc(m.paths, func(p string) bool { return c.pkgs[p] != nil && c.pkgs[p].syms[m.sym] }) {
			problems = append(problems, fmt.Sprintf("%s: %s: %s declares no %s", m.at, m.text, strings.Join(m.paths, ", "), m.sym))
		}
	}
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
	var missing []string
	for _, m := range mentions {
		for _, p := range m.paths {
			if c.pkgs[p] == nil && !slices.Contains(missing, p) {
				missing = append(missing, p)
			}
		}
	}
	if err := c.goList(missing); err != nil {
		return nil, err
	}
	for _, m := range mentions {
		if !slices.ContainsFunc(m.paths, func(p string) bool { return c.pkgs[p] != nil && c.pkgs[p].syms[m.sym] }) {
			problems = append(problems, fmt.Sprintf("%s: `%s`: %s declares no %s", m.at, m.text, strings.Join(m.paths, ", "), m.sym))
		}
	}
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
