// Package buildindex is catalogsync's take on `opm serve --cache-only`: a
// catalog image's build stage runs `catalogsync index` to validate its FBC
// and write the normalized catalog.jsonl, an object list and a manifest
// next to it. The manifest names a digest of the FBC exactly as the
// pipeline sees it (after .indexignore, in walk order), so a consumer can
// prove the pre-built output belongs to the FBC it unpacked, and the
// sha256 of the outputs, so corruption is detected. Nothing is trusted on
// its word: a mismatch means "rebuild from the FBC".
package buildindex

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/catalogsync/catalogsync/sync/fbc"
	"github.com/catalogsync/catalogsync/sync/unpack"
)

// Label names the pre-built index directory inside a catalog image, e.g.
// io.catalogsync.index.v1=/catalogsync-index.
const Label = "io.catalogsync.index.v1"

// Files of an index directory.
const (
	ManifestFile = "manifest.json"
	CatalogFile  = "catalog.jsonl"
	// ObjectsFile lists, per line of catalog.jsonl, its schema, package,
	// name and length, so a consumer can index without parsing.
	ObjectsFile = "objects.jsonl"
)

// Version is the manifest format written.
const Version = 1

var (
	// ErrStale means the index was built from other FBC content.
	ErrStale = errors.New("pre-built index does not match the catalog")
	// ErrTampered means an index file does not match its manifest.
	ErrTampered = errors.New("pre-built index is corrupt")
	// ErrBadIndex means the index directory is missing or unreadable.
	ErrBadIndex = errors.New("pre-built index unusable")
)

// Manifest describes an index directory.
type Manifest struct {
	Version int `json:"version"`
	// FBCDigest is Digest over the FBC the index was built from.
	FBCDigest     string `json:"fbcDigest"`
	CatalogSHA256 string `json:"catalogSha256"`
	ObjectsSHA256 string `json:"objectsSha256"`
	Objects       int    `json:"objects"`
	Packages      int    `json:"packages"`
	Bundles       int    `json:"bundles"`
}

// ObjectLine is one line of objects.jsonl.
type ObjectLine struct {
	Schema  string `json:"s"`
	Package string `json:"p,omitempty"`
	Name    string `json:"n,omitempty"`
	Len     int    `json:"l"`
}

// Hasher computes the FBC digest. Feed it each file's content as it
// streams (Add, keyed by the content path unpack reports), then Sum over
// the final file list. The digest is sha256 over, in walk order, the line
// "<path>\x00<sha256 hex of content>\n" per file: equivalent to hashing
// paths and contents, but computable while layers stream in any order.
type Hasher struct {
	files map[string]string
}

// NewHasher returns an empty Hasher.
func NewHasher() *Hasher { return &Hasher{files: map[string]string{}} }

// Add hashes r as the content of path. Safe to call from one goroutine at
// a time only.
func (h *Hasher) Add(path string, r io.Reader) error {
	s := sha256.New()
	if _, err := io.Copy(s, r); err != nil {
		return fmt.Errorf("hash %s: %w", path, err)
	}
	h.files[path] = hex.EncodeToString(s.Sum(nil))
	return nil
}

// Sum returns the digest of files, as unpack.Unpacker.Files lists them.
func (h *Hasher) Sum(files []unpack.File) (string, error) {
	s := sha256.New()
	for _, f := range files {
		c, ok := h.files[f.Content]
		if !ok {
			return "", fmt.Errorf("%w: %s was not hashed", ErrBadIndex, f.Content)
		}
		fmt.Fprintf(s, "%s\x00%s\n", f.Path, c)
	}
	return "sha256:" + hex.EncodeToString(s.Sum(nil)), nil
}

// Scan reads an FBC directory on disk with the pipeline's own layer
// semantics (links, .indexignore, walk order) by streaming it as one tar
// layer through unpack, and returns its files and the Hasher that saw them.
func Scan(ctx context.Context, dir string) ([]unpack.File, *Hasher, error) {
	u, err := unpack.New("configs", unpack.DefaultLimits)
	if err != nil {
		return nil, nil, err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarDir(ctx, dir, "configs", pw)) }()
	h := NewHasher()
	err = u.Layer(pr, func(p string, _ int64, r io.Reader) error { return h.Add(p, r) })
	pr.CloseWithError(io.ErrClosedPipe) // unblock the writer if we stopped early
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", dir, err)
	}
	files, err := u.Files()
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", dir, err)
	}
	return files, h, nil
}

func tarDir(ctx context.Context, dir, root string, w io.Writer) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		name := filepath.ToSlash(filepath.Join(root, rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = name
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			// The tree is the caller's own catalog directory; a symlink
			// swapped in during the walk changes only what gets hashed.
			f, err := os.Open(p) //nolint:gosec // G122: see above
			if err != nil {
				return err
			}
			// Closed per file, not deferred: a defer here would hold every
			// file of the tree open until the walk ends.
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// Build validates the FBC in dir and writes an index directory to out
// (created; existing index files replaced).
func Build(ctx context.Context, dir, out string) (Manifest, error) {
	files, h, err := Scan(ctx, dir)
	if err != nil {
		return Manifest{}, err
	}
	digest, err := h.Sum(files)
	if err != nil {
		return Manifest{}, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil { //nolint:gosec // G301: the index is read by the serving process, maybe another user
		return Manifest{}, fmt.Errorf("%w: %w", ErrBadIndex, err)
	}
	cat, err := newHashedFile(filepath.Join(out, CatalogFile))
	if err != nil {
		return Manifest{}, err
	}
	defer cat.f.Close()
	objs, err := newHashedFile(filepath.Join(out, ObjectsFile))
	if err != nil {
		return Manifest{}, err
	}
	defer objs.f.Close()
	v := fbc.NewValidator()
	enc := json.NewEncoder(objs.w)
	m := Manifest{Version: Version, FBCDigest: digest}
	for _, file := range files {
		f, err := os.Open(filepath.Join(dir, filepath.FromSlash(file.Content)))
		if err != nil {
			return Manifest{}, err
		}
		err = fbc.Parse(bufio.NewReaderSize(f, 1<<20), func(o fbc.Object) error {
			v.Add(file.Path, o)
			m.Objects++
			if _, err := cat.w.Write(o.Blob); err != nil {
				return err
			}
			return enc.Encode(ObjectLine{Schema: o.Schema, Package: o.Package, Name: o.Name, Len: len(o.Blob)})
		})
		f.Close()
		if err != nil {
			return Manifest{}, fmt.Errorf("%s: %w", file.Path, err)
		}
	}
	if err := v.Validate(); err != nil {
		return Manifest{}, err
	}
	st := v.Stats()
	m.Packages, m.Bundles = st.Packages, st.Bundles
	if m.CatalogSHA256, err = cat.finish(); err != nil {
		return Manifest{}, err
	}
	if m.ObjectsSHA256, err = objs.finish(); err != nil {
		return Manifest{}, err
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(out, ManifestFile), append(b, '\n'), 0o644); err != nil { //nolint:gosec // G306: as the directory above
		return Manifest{}, err
	}
	return m, nil
}

type hashedFile struct {
	f *os.File
	h hash.Hash
	w *bufio.Writer
}

func newHashedFile(p string) (*hashedFile, error) {
	f, err := os.Create(p)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	return &hashedFile{f: f, h: h, w: bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)}, nil
}

func (hf *hashedFile) finish() (string, error) {
	if err := hf.w.Flush(); err != nil {
		return "", err
	}
	if err := hf.f.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(hf.h.Sum(nil)), nil
}

// Index is a verified index directory.
type Index struct {
	Dir      string
	Manifest Manifest
}

// Open verifies the index in dir against fbcDigest (the digest of the FBC
// actually unpacked) and the manifest's checksums. ErrStale and ErrTampered
// say the caller must build from the FBC instead; ErrBadIndex that the
// directory is not an index.
func Open(dir, fbcDigest string) (*Index, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadIndex, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil || m.Version != Version {
		return nil, fmt.Errorf("%w: %s: version %d, err %v", ErrBadIndex, ManifestFile, m.Version, err)
	}
	if m.FBCDigest != fbcDigest {
		return nil, fmt.Errorf("%w: built from %s, catalog is %s", ErrStale, m.FBCDigest, fbcDigest)
	}
	for name, want := range map[string]string{CatalogFile: m.CatalogSHA256, ObjectsFile: m.ObjectsSHA256} {
		got, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadIndex, err)
		}
		if got != want {
			return nil, fmt.Errorf("%w: %s has sha256 %s, manifest says %s", ErrTampered, name, got, want)
		}
	}
	return &Index{Dir: dir, Manifest: m}, nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Objects calls fn for each object of a verified index, in catalog order,
// with the schema, package and name from objects.jsonl and the line from
// catalog.jsonl. line is only valid during the call.
func (x *Index) Objects(fn func(o ObjectLine, line []byte) error) error {
	cf, err := os.Open(filepath.Join(x.Dir, CatalogFile))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadIndex, err)
	}
	defer cf.Close()
	of, err := os.Open(filepath.Join(x.Dir, ObjectsFile))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadIndex, err)
	}
	defer of.Close()
	cat := bufio.NewReaderSize(cf, 1<<20)
	dec := json.NewDecoder(bufio.NewReaderSize(of, 256<<10))
	var buf []byte
	n := 0
	for {
		var o ObjectLine
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrBadIndex, ObjectsFile, err)
		}
		if o.Len <= 0 || o.Len > 1<<30 {
			return fmt.Errorf("%w: %s: bad length %d", ErrBadIndex, ObjectsFile, o.Len)
		}
		if cap(buf) < o.Len {
			buf = make([]byte, o.Len)
		}
		b := buf[:o.Len]
		if _, err := io.ReadFull(cat, b); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrBadIndex, CatalogFile, err)
		}
		if err := fn(o, b); err != nil {
			return err
		}
		n++
	}
	if n != x.Manifest.Objects {
		return fmt.Errorf("%w: %d objects, manifest says %d", ErrBadIndex, n, x.Manifest.Objects)
	}
	return nil
}

// Validate parses the index's catalog.jsonl and validates it: the check a
// consumer keeps even when the digests match, since the image author's
// build stage is not proof of validity.
func (x *Index) Validate() (fbc.Stats, error) {
	f, err := os.Open(filepath.Join(x.Dir, CatalogFile))
	if err != nil {
		return fbc.Stats{}, fmt.Errorf("%w: %w", ErrBadIndex, err)
	}
	defer f.Close()
	v := fbc.NewValidator()
	if err := fbc.Parse(bufio.NewReaderSize(f, 1<<20), func(o fbc.Object) error {
		v.Add(CatalogFile, o)
		return nil
	}); err != nil {
		return fbc.Stats{}, err
	}
	return v.Stats(), v.Validate()
}
