// Package unpack applies OCI layer semantics to a catalog image's layers as
// they stream by, keeping only the FBC directory. Layers are read from the
// last to the first, so the first time a path is seen it is final: no file
// is ever buffered to find out whether a later layer replaces it. At the end
// it returns the surviving files in the order operator-registry walks them,
// with .indexignore rules applied.
package unpack

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// IndexIgnore is the name of the files that hold ignore patterns.
const IndexIgnore = ".indexignore"

var (
	// ErrUnsafe is returned for a tar entry that could write outside its
	// place or is not a plain file: "..", absolute paths, links that leave
	// the FBC directory, devices.
	ErrUnsafe = errors.New("unsafe layer entry")
	// ErrLimit is returned when a layer exceeds a size or entry cap.
	ErrLimit = errors.New("layer exceeds limit")
	// ErrNoConfigs is returned when the FBC directory is absent or empty.
	ErrNoConfigs = errors.New("catalog directory not found in image")
)

// Limits bound what a catalog image may make us read.
type Limits struct {
	// MaxBytes caps the uncompressed bytes read from all layers.
	MaxBytes int64
	// MaxFileBytes caps one FBC file.
	MaxFileBytes int64
	// MaxEntries caps tar entries over all layers.
	MaxEntries int
}

// DefaultLimits fit the largest public catalogs many times over.
var DefaultLimits = Limits{MaxBytes: 8 << 30, MaxFileBytes: 1 << 30, MaxEntries: 2_000_000}

// FileFunc receives one regular file of the FBC directory. path is relative
// to the directory. It must read r before returning (or return an error).
// A path may come again when a layer holds it twice: the later call is
// the file's content, as extracting the layer would leave it.
type FileFunc func(path string, size int64, r io.Reader) error

// File is a file of the final FBC directory.
type File struct {
	// Path relative to the FBC directory.
	Path string
	// Content is the path whose content this file has: Path itself, or the
	// file a link resolves to.
	Content string
}

type kind uint8

const (
	kindFile kind = iota + 1
	kindDir
	kindSymlink
	kindHardlink
)

type node struct {
	kind   kind
	target string // for links, the resolved path relative to the image root
}

// Unpacker collects one image. Call Layer for each layer from the last to
// the first, then Files.
type Unpacker struct {
	root   string // the FBC directory, clean, relative to the image root ("configs")
	limits Limits

	nodes   map[string]node // paths at or under root, as first seen (= final)
	deleted map[string]bool // whiteouts from layers above the current one
	opaque  map[string]bool // opaque directories from layers above
	ignores map[string][]byte

	bytesRead int64
	entries   int
}

// New returns an Unpacker for the FBC directory named by the image label.
func New(configsDir string, limits Limits) (*Unpacker, error) {
	root := path.Clean("/" + configsDir)
	if configsDir == "" || strings.ContainsRune(configsDir, 0) {
		return nil, fmt.Errorf("%w: catalog directory label %q", ErrUnsafe, configsDir)
	}
	if limits == (Limits{}) {
		limits = DefaultLimits
	}
	return &Unpacker{
		root:    strings.TrimPrefix(root, "/"),
		limits:  limits,
		nodes:   map[string]node{},
		deleted: map[string]bool{},
		opaque:  map[string]bool{},
		ignores: map[string][]byte{},
	}, nil
}

// Layer reads one uncompressed tar stream. Layers must come last first.
func (u *Unpacker) Layer(r io.Reader, fn FileFunc) error {
	cr := &capReader{r: r, u: u}
	tr := tar.NewReader(cr)
	// Whiteouts of this layer hide lower layers only, so they take effect
	// once the layer is done.
	deleted := map[string]bool{}
	opaque := map[string]bool{}
	// Paths this layer gave: a later entry for the same path in the same
	// layer replaces the earlier, as extracting the layer would.
	mine := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if cr.err != nil {
				return cr.err
			}
			return fmt.Errorf("read layer: %w", err)
		}
		u.entries++
		if u.entries > u.limits.MaxEntries {
			return fmt.Errorf("%w: more than %d entries", ErrLimit, u.limits.MaxEntries)
		}
		p, err := cleanEntry(hdr.Name)
		if err != nil {
			return err
		}
		if p == "" { // the image root itself
			continue
		}
		dir, base := parent(p), path.Base(p)
		if base == ".wh..wh..opq" {
			if u.relevant(dir) {
				opaque[dir] = true
			}
			continue
		}
		if strings.HasPrefix(base, ".wh.") {
			target := path.Join(dir, strings.TrimPrefix(base, ".wh."))
			if u.relevant(target) {
				deleted[target] = true
			}
			continue
		}
		if !u.within(p) || (u.hidden(p) && !mine[p]) {
			continue
		}
		if err := u.add(tr, hdr, p, fn); err != nil {
			return err
		}
		mine[p] = true
	}
	for k := range deleted {
		u.deleted[k] = true
	}
	for k := range opaque {
		u.opaque[k] = true
	}
	return nil
}

func (u *Unpacker) add(tr *tar.Reader, hdr *tar.Header, p string, fn FileFunc) error {
	rel := u.rel(p)
	switch hdr.Typeflag {
	case tar.TypeDir:
		u.nodes[p] = node{kind: kindDir}
	case tar.TypeReg: // the tar reader reports the old TypeRegA as TypeReg
		u.nodes[p] = node{kind: kindFile}
		if p == u.root {
			return fmt.Errorf("%w: %q: catalog directory is a file", ErrUnsafe, hdr.Name)
		}
		if hdr.Size > u.limits.MaxFileBytes {
			return fmt.Errorf("%w: %q is %d bytes (limit %d)", ErrLimit, hdr.Name, hdr.Size, u.limits.MaxFileBytes)
		}
		if path.Base(p) == IndexIgnore {
			b, err := io.ReadAll(io.LimitReader(tr, 1<<20+1))
			if err != nil {
				return fmt.Errorf("read %q: %w", hdr.Name, err)
			}
			if len(b) > 1<<20 {
				return fmt.Errorf("%w: %q is larger than 1 MiB", ErrLimit, hdr.Name)
			}
			u.ignores[rel] = b
			return nil
		}
		if err := fn(rel, hdr.Size, tr); err != nil {
			return err
		}
	case tar.TypeSymlink:
		if hdr.Linkname == "" {
			return fmt.Errorf("%w: %q: empty symlink", ErrUnsafe, hdr.Name)
		}
		// A symlink resolves against its own directory, or the image root
		// when absolute; either way it must stay in the FBC directory.
		target := hdr.Linkname
		if !strings.HasPrefix(target, "/") {
			target = path.Join(path.Dir(p), target) //nolint:gosec // G305: u.within checks it below
		}
		target = strings.TrimPrefix(path.Clean("/"+target), "/")
		if !u.within(target) || target == u.root || target == "" {
			return fmt.Errorf("%w: %q links to %q, outside %s", ErrUnsafe, hdr.Name, hdr.Linkname, "/"+u.root)
		}
		u.nodes[p] = node{kind: kindSymlink, target: target}
	case tar.TypeLink:
		target, err := cleanEntry(hdr.Linkname)
		if err != nil || !u.within(target) || target == u.root {
			return fmt.Errorf("%w: %q hard-links to %q, outside %s", ErrUnsafe, hdr.Name, hdr.Linkname, "/"+u.root)
		}
		u.nodes[p] = node{kind: kindHardlink, target: target}
	default:
		return fmt.Errorf("%w: %q is a %s, not a file", ErrUnsafe, hdr.Name, typeName(hdr.Typeflag))
	}
	return nil
}

// Files returns the final FBC files in operator-registry's walk order,
// without those that .indexignore files exclude.
func (u *Unpacker) Files() ([]File, error) {
	if n, ok := u.nodes[u.root]; ok && n.kind != kindDir {
		return nil, fmt.Errorf("%w: /%s is not a directory", ErrNoConfigs, u.root)
	}
	var files []File
	var ignoreFiles []string
	// In walk order, so that the first error (a link loop) is the same
	// every time.
	paths := slices.SortedFunc(maps.Keys(u.nodes), WalkCompare)
	for _, p := range paths {
		n := u.nodes[p]
		if p == u.root || n.kind == kindDir {
			continue
		}
		if !u.reachable(p) {
			continue
		}
		rel := u.rel(p)
		if path.Base(p) == IndexIgnore {
			if _, ok := u.ignores[rel]; ok {
				ignoreFiles = append(ignoreFiles, rel)
			}
			continue
		}
		content, err := u.resolve(p)
		if err != nil {
			return nil, err
		}
		if content == "" { // a link to an .indexignore file: skipped like one
			continue
		}
		files = append(files, File{Path: rel, Content: u.rel(content)})
	}
	if len(u.nodes) == 0 {
		return nil, fmt.Errorf("%w: /%s", ErrNoConfigs, u.root)
	}
	slices.SortFunc(files, func(a, b File) int { return WalkCompare(a.Path, b.Path) })
	slices.SortFunc(ignoreFiles, WalkCompare)

	m, err := u.matcher(ignoreFiles)
	if err != nil {
		return nil, err
	}
	kept := files[:0]
	for _, f := range files {
		if m.Match(strings.Split(f.Path, "/"), false) {
			continue
		}
		kept = append(kept, f)
	}
	return kept, nil
}

// matcher builds the same rules operator-registry builds: .indexignore
// itself, then each file's lines in walk order, scoped to its directory.
// A line too long to scan is refused rather than taken, as a plain
// bufio.Scanner would, for the end of the file: the patterns after it
// would silently not apply, and files the author excluded would be served.
func (u *Unpacker) matcher(ignoreFiles []string) (gitignore.Matcher, error) {
	patterns := []gitignore.Pattern{gitignore.ParsePattern(IndexIgnore, nil)}
	for _, f := range ignoreFiles {
		var domain []string
		if d := path.Dir(f); d != "." {
			domain = strings.Split(d, "/")
		}
		sc := bufio.NewScanner(bytes.NewReader(u.ignores[f]))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			patterns = append(patterns, gitignore.ParsePattern(line, domain))
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%w: %q: a line over %d bytes", ErrLimit, f, bufio.MaxScanTokenSize)
		}
	}
	return gitignore.NewMatcher(patterns), nil
}

// resolve follows links to a regular file; "" means an .indexignore file.
func (u *Unpacker) resolve(p string) (string, error) {
	orig := p
	for hops := 0; hops < 16; hops++ {
		n, ok := u.nodes[p]
		if !ok || !u.reachable(p) {
			return "", fmt.Errorf("%w: %q links to %q, which is not in the catalog", ErrUnsafe, "/"+orig, "/"+p)
		}
		switch n.kind {
		case kindFile:
			if path.Base(p) == IndexIgnore {
				return "", nil
			}
			return p, nil
		case kindDir:
			return "", fmt.Errorf("%w: %q links to directory %q (not supported)", ErrUnsafe, "/"+orig, "/"+p)
		}
		p = n.target
	}
	return "", fmt.Errorf("%w: %q: too many levels of links", ErrUnsafe, "/"+orig)
}

// reachable reports whether every parent of p is a directory (a file or
// link that replaced a parent hides what was beneath it).
func (u *Unpacker) reachable(p string) bool {
	for d := parent(p); d != "" && d != u.root; d = parent(d) {
		if n, ok := u.nodes[d]; ok && n.kind != kindDir {
			return false
		}
	}
	return true
}

// within reports whether p is the FBC directory or inside it.
func (u *Unpacker) within(p string) bool {
	return u.root == "" || p == u.root || strings.HasPrefix(p, u.root+"/")
}

// relevant reports whether a whiteout at p can affect the FBC directory.
func (u *Unpacker) relevant(p string) bool {
	return u.within(p) || p == "" || strings.HasPrefix(u.root, p+"/")
}

// hidden reports whether an upper layer already decided p: it put
// something at p or at a parent that is not a directory, deleted p or a
// parent, or made a parent opaque.
func (u *Unpacker) hidden(p string) bool {
	if _, ok := u.nodes[p]; ok || u.deleted[p] {
		return true
	}
	for d := parent(p); ; d = parent(d) {
		if u.deleted[d] || u.opaque[d] {
			return true
		}
		if n, ok := u.nodes[d]; ok && n.kind != kindDir {
			return true
		}
		if d == "" {
			return false
		}
	}
}

func (u *Unpacker) rel(p string) string {
	if u.root == "" {
		return p
	}
	return strings.TrimPrefix(strings.TrimPrefix(p, u.root), "/")
}

// cleanEntry normalises a tar entry name to a relative slash path and
// refuses names that climb out of the image root.
func cleanEntry(name string) (string, error) {
	if strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("%w: %q: invalid name", ErrUnsafe, name)
	}
	if strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("%w: %q: absolute path", ErrUnsafe, name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: %q: path climbs out with a \"..\" element", ErrUnsafe, name)
		}
	}
	c := path.Clean(name)
	if c == "." {
		return "", nil
	}
	return c, nil
}

// WalkCompare orders paths as [io/fs.WalkDir] visits them, the order of
// Files: component by component, so "a/b" comes before "a.txt" ('/' is
// not compared as a byte).
func WalkCompare(a, b string) int {
	for {
		ai, bi := strings.IndexByte(a, '/'), strings.IndexByte(b, '/')
		ah, bh := a, b
		if ai >= 0 {
			ah = a[:ai]
		}
		if bi >= 0 {
			bh = b[:bi]
		}
		if c := strings.Compare(ah, bh); c != 0 {
			return c
		}
		if ai < 0 || bi < 0 {
			return btoi(ai >= 0) - btoi(bi >= 0)
		}
		a, b = a[ai+1:], b[bi+1:]
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parent returns p's directory; "" is the image root.
func parent(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

func typeName(t byte) string {
	switch t {
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "fifo"
	}
	return fmt.Sprintf("tar entry of type %q", t)
}

// capReader counts the uncompressed bytes of all layers against MaxBytes,
// so a decompression bomb stops at the cap instead of filling memory/disk.
type capReader struct {
	r   io.Reader
	u   *Unpacker
	err error
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	c.u.bytesRead += int64(n)
	if c.u.bytesRead > c.u.limits.MaxBytes {
		c.err = fmt.Errorf("%w: more than %d uncompressed bytes", ErrLimit, c.u.limits.MaxBytes)
		return n, c.err
	}
	return n, err
}
