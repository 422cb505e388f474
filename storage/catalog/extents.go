package catalog

// Shared content. A sync that changed one package of a large catalog would
// otherwise write the whole catalog.jsonl again, every byte of it through
// the store (on object storage: uploaded, and stored once more per
// digest). Content written with ShareFrom stores only the lines it added,
// in delta.jsonl, and its meta.json (format 2) lists catalog.jsonl as
// extents: runs of its own delta.jsonl and of the objects the earlier
// content's lines lie in. Readers see the same catalog.jsonl either way.
//
// Extents always name the object the bytes are in (never content that in
// turn refers further), so a read is one ranged Get per extent it spans.
// Content refers only to complete content of the same catalog, and GC
// keeps whatever kept content refers to. The number of extents and of
// objects referred to is bounded: content past maxShareExtents or
// maxShareSources is not shared from, so the next sync writes a whole
// catalog.jsonl again (format 1) and the chain starts over.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/catalogsync/catalogsync/storage"
)

const (
	// deltaFile holds the lines shared content added itself. It is not
	// catalog.jsonl so a writer that knows only format 1 (a replica of an
	// older version during a rolling update) never replaces it.
	deltaFile = "delta.jsonl"
	// sharedFormat is meta.json's format for content with Extents.
	sharedFormat = 2
	// maxExtents bounds Meta.Extents (meta.json stays a few KB).
	maxExtents = 256
	// maxShareExtents and maxShareSources bound the content ShareFrom
	// shares from; past them the writer copies instead.
	maxShareExtents = 64
	maxShareSources = 8
)

// Extent is a run of catalog.jsonl's bytes stored in Object, a key
// relative to the catalog's directory ("sha256-<hex>/delta.jsonl" or
// "sha256-<hex>/catalog.jsonl"), from Off for Len bytes.
type Extent struct {
	Object string `json:"object"`
	Off    int64  `json:"off"`
	Len    int64  `json:"len"`
}

// digest is the content digest whose directory holds the extent's object.
func (e Extent) digest() string {
	dir, _, _ := strings.Cut(e.Object, "/")
	return gcDirDigest(dir)
}

// checkExtents validates format 2's extents against the meta's size.
func checkExtents(m Meta) error {
	if len(m.Extents) > maxExtents || len(m.Extents) == 0 && m.Size != 0 {
		return fmt.Errorf("%d extents", len(m.Extents))
	}
	var total int64
	for _, e := range m.Extents {
		dir, file, ok := strings.Cut(e.Object, "/")
		if !ok || gcDirDigest(dir) == "" || file != contentFile && file != deltaFile {
			return fmt.Errorf("extent object %q", e.Object)
		}
		if e.Off < 0 || e.Len <= 0 || e.Off > maxContent-e.Len || total > maxContent-e.Len {
			return fmt.Errorf("extent %d+%d", e.Off, e.Len)
		}
		total += e.Len
	}
	if total != m.Size {
		return fmt.Errorf("extents add up to %d bytes, not %d", total, m.Size)
	}
	return nil
}

// maxContent bounds offsets so sums of them never overflow.
const maxContent = 1 << 50

// extents returns where m's catalog.jsonl lies: its extents, or for
// format 1 the whole catalog.jsonl.
func (m Meta) extents() []Extent {
	if m.Format == sharedFormat {
		return m.Extents
	}
	if m.Size == 0 {
		return nil
	}
	return []Extent{{Object: digestDir(m.Digest) + "/" + contentFile, Len: m.Size}}
}

// Sources returns the digests of the earlier content whose objects m's
// catalog.jsonl reads (without m's own), for GC.
func (m Meta) Sources() []string {
	var out []string
	for _, e := range m.extents() {
		if d := e.digest(); d != m.Digest && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// extentMap maps offsets of catalog.jsonl to its extents.
type extentMap struct {
	exts   []Extent
	starts []int64 // starts[i] is the offset of exts[i] in catalog.jsonl
}

func newExtentMap(exts []Extent) extentMap {
	starts := make([]int64, len(exts))
	var pos int64
	for i, e := range exts {
		starts[i] = pos
		pos += e.Len
	}
	return extentMap{exts: exts, starts: starts}
}

// slice returns the pieces of the objects that hold off..off+n, in order.
// The range must lie within the content.
func (x extentMap) slice(off, n int64) []Extent {
	i := sort.Search(len(x.starts), func(i int) bool { return x.starts[i] > off }) - 1
	var out []Extent
	for ; n > 0 && i >= 0 && i < len(x.exts); i++ {
		e := x.exts[i]
		skip := off - x.starts[i]
		take := min(e.Len-skip, n)
		out = append(out, Extent{Object: e.Object, Off: e.Off + skip, Len: take})
		off, n = off+take, n-take
	}
	return out
}

// openContent opens n bytes of the catalog.jsonl m describes from off; a
// range not within it is ErrCorrupt. The first piece is opened before it
// returns, so a missing object is an error here, not while reading.
func openContent(ctx context.Context, s storage.Store, m Meta, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n < 0 || off > m.Size || n > m.Size-off {
		return nil, fmt.Errorf("catalog: range %d+%d of %s at %s (%d bytes): %w", off, n, m.Name, m.Digest, m.Size, ErrCorrupt)
	}
	if m.Format != sharedFormat {
		return s.Get(ctx, contentPrefix(m.Name, m.Digest)+contentFile, off, n)
	}
	r := &extentReader{ctx: ctx, s: s, prefix: catalogPrefix(m.Name), pieces: newExtentMap(m.Extents).slice(off, n)}
	if err := r.next(); err != nil {
		return nil, err
	}
	return r, nil
}

// extentReader reads pieces one after the other, each exactly its length:
// an object shorter than its extent is corrupt content, never silently
// shifted bytes.
type extentReader struct {
	ctx    context.Context
	s      storage.Store
	prefix string
	pieces []Extent
	rc     io.ReadCloser
	left   int64 // bytes of the open piece not read yet
}

func (r *extentReader) next() error {
	if r.rc != nil {
		r.rc.Close()
		r.rc = nil
	}
	if len(r.pieces) == 0 {
		return nil
	}
	p := r.pieces[0]
	r.pieces = r.pieces[1:]
	rc, err := r.s.Get(r.ctx, r.prefix+p.Object, p.Off, p.Len)
	if err != nil {
		return fmt.Errorf("catalog: %s: %w", r.prefix+p.Object, err)
	}
	r.rc, r.left = rc, p.Len
	return nil
}

func (r *extentReader) Read(b []byte) (int, error) {
	for r.rc != nil && r.left == 0 {
		if err := r.next(); err != nil {
			return 0, err
		}
	}
	if r.rc == nil {
		return 0, io.EOF
	}
	n, err := r.rc.Read(b[:min(int64(len(b)), r.left)])
	r.left -= int64(n)
	if errors.Is(err, io.EOF) {
		if r.left > 0 {
			return n, fmt.Errorf("catalog: an object ends inside its extent: %w", ErrCorrupt)
		}
		err = nil
	}
	return n, err
}

func (r *extentReader) Close() error {
	r.pieces = nil
	if r.rc != nil {
		err := r.rc.Close()
		r.rc = nil
		return err
	}
	return nil
}

// ShareFrom lets a Writer refer to prev's lines instead of copying them
// (AddShared): prev is complete content of the same catalog (HasContent).
// It has no effect when prev is too fragmented to share from, or its
// objects are not all there; CanShare tells.
func ShareFrom(prev Meta) WriterOption {
	return func(w *Writer) { p := prev; w.shareFrom = &p }
}

// WriterOption configures NewWriter.
type WriterOption func(*Writer)

// startSharing decides whether w refers to prev's lines: prev must be
// other complete content of w's catalog, within the bounds, with every
// object it reads present and long enough.
func (w *Writer) startSharing(ctx context.Context) error {
	prev := w.shareFrom
	if prev == nil || w.static || prev.Name != w.name || prev.Digest == w.digest || checkDigest(prev.Digest) != nil {
		return nil
	}
	exts := prev.extents()
	if len(exts) > maxShareExtents || len(prev.Sources()) >= maxShareSources {
		return nil
	}
	need := map[string]int64{}
	for _, e := range exts {
		need[e.Object] = max(need[e.Object], e.Off+e.Len)
	}
	for obj, n := range need {
		in, err := w.store.Stat(ctx, catalogPrefix(w.name)+obj)
		if errors.Is(err, storage.ErrNotExist) || err == nil && in.Size < n {
			return nil // damaged: the sync copies, and fails if it cannot
		}
		if err != nil {
			return err
		}
	}
	w.from = newExtentMap(exts)
	w.sharing = true
	return nil
}

// CanShare reports whether AddShared may be called for the next object:
// the writer shares from earlier content and its extents stay within
// bounds whatever one more object adds.
func (w *Writer) CanShare() bool {
	return w.sharing && len(w.extents)+len(w.from.exts)+1 <= maxExtents
}

// AddShared appends one object whose line is the n bytes at off in the
// catalog.jsonl of the content given to ShareFrom, without copying them:
// the content's extents refer to where they are. Call it only when
// CanShare; the shape is merged as with AddShaped.
func (w *Writer) AddShared(schema, pkg, name string, off, n int64) error {
	if w.closed || w.ended {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	last := len(w.from.starts) - 1
	if !w.CanShare() || n <= 0 || n > maxLine || off < 0 || last < 0 || off+n > w.from.starts[last]+w.from.exts[last].Len {
		return fmt.Errorf("catalog: shared object %d (%s %s %s) at %d+%d: %w", len(w.objs), schema, pkg, name, off, n, ErrInvalidLine)
	}
	for _, e := range w.from.slice(off, n) {
		w.appendExtent(e)
	}
	w.objs = append(w.objs, object{w.intern(schema), w.intern(pkg), w.intern(name), n})
	w.size += n
	return nil
}

// appendExtent adds e, extending the last extent when e continues it.
func (w *Writer) appendExtent(e Extent) {
	if k := len(w.extents) - 1; k >= 0 && w.extents[k].Object == e.Object && w.extents[k].Off+w.extents[k].Len == e.Off {
		w.extents[k].Len += e.Len
		return
	}
	w.extents = append(w.extents, e)
}
