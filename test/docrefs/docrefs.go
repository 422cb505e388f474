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
	"os/exec"
	"path"
	"path/filepath"
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

// load reads the packages of paths not read yet, in one go list.
func (c *Checker) load(paths []string) error {
	var missing []string
	for _, p := range paths {
		if c.pkgs[p] == nil && !slices.Contains(missing, p) {
			missing = append(missing, p)
		}
	}
	return c.goList(missing)
}

// unknown lists, formatted with format, the mentions that no package
// they may name declares.
func (c *Checker) unknown(ms []mention, format string) []string {
	var problems []string
	for _, m := range ms {
		if !slices.ContainsFunc(m.paths, func(p string) bool { return c.pkgs[p] != nil && c.pkgs[p].syms[m.sym] }) {
			problems = append(problems, fmt.Sprintf(format, m.at, m.text, strings.Join(m.paths, ", "), m.sym))
		}
	}
	return problems
}

// mention is a qualified identifier in a comment's plain text or a
// doc's code span.
type mention struct {
	at, text string
	paths    []string // the packages its qualifier may name
	sym      string   // Name or Type.Name
}

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
