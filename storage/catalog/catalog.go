// Package catalog is the published catalog format in a storage.Store: the
// writer that stores a File-Based Catalog, the pointer that publishes it,
// and the reader the HTTP server answers catalogd's /all and /metas from.
//
// Layout, for a catalog name (a DNS-1123 subdomain) and an image digest:
//
//	catalogs/<name>/<alg>-<hex>/catalog.jsonl  every FBC object, one JSON line each
//	catalogs/<name>/<alg>-<hex>/index          byte ranges by schema, package, name
//	catalogs/<name>/<alg>-<hex>/graphql-schema.json  fields seen per schema, for GraphQL
//	catalogs/<name>/<alg>-<hex>/files          the per-file summary a later sync reuses
//	catalogs/<name>/<alg>-<hex>/meta.json      written last: the content is complete
//	catalogs/<name>/current                    the pointer to the published digest
//	catalogs/<name>/lastpoll                   the last poll, changed or not
//
// Content is addressed by the image digest and never changes once its
// meta.json exists; publishing is a compare-and-swap of the small pointer.
// Content written with ShareFrom has delta.jsonl (its own lines) instead of
// catalog.jsonl, which its meta.json describes as extents (extents.go).
package catalog

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog/gqlshape"
)

var (
	// ErrInvalidName is returned for a catalog name that is not a DNS-1123
	// subdomain.
	ErrInvalidName = errors.New("invalid catalog name")
	// ErrInvalidDigest is returned for a digest that is not
	// "sha256:<64 hex>" or "sha512:<128 hex>".
	ErrInvalidDigest = errors.New("invalid digest")
	// ErrInvalidLine is returned by Writer.Add for a line that is not
	// exactly one "\n"-terminated line.
	ErrInvalidLine = errors.New("invalid catalog line")
	// ErrInvalidPointer is returned by Publish for a pointer missing its
	// resolution time.
	ErrInvalidPointer = errors.New("invalid pointer")
	// ErrIncomplete is returned when content has no meta.json: it is being
	// written, was aborted, or its writer died.
	ErrIncomplete = errors.New("catalog content incomplete")
	// ErrStale is returned by Publish when the current pointer was resolved
	// later than the one offered.
	ErrStale = errors.New("newer catalog already published")
	// ErrCorrupt is returned when stored metadata does not parse or does
	// not agree with itself.
	ErrCorrupt = errors.New("catalog data corrupt")
	// ErrFormat is returned for an index or meta of a format version this
	// code does not know.
	ErrFormat = errors.New("unsupported catalog format version")
	// ErrClosed is returned by a Writer used after Commit or Abort.
	ErrClosed = errors.New("catalog writer closed")
)

// metaFormat is the version of the layout and meta.json.
const metaFormat = 1

// Meta is meta.json: the description of complete content.
type Meta struct {
	Format int    `json:"format"`
	Name   string `json:"name"`
	Digest string `json:"digest"`
	// Ref is the image reference the content was pulled from.
	Ref     string `json:"ref,omitempty"`
	Objects int    `json:"objects"`
	// Size is the byte size of catalog.jsonl; SHA256 its hex sha256, ""
	// for shared content (format 2), which never reads the bytes it shares.
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Extents is where catalog.jsonl lies in format 2 (see ShareFrom).
	Extents []Extent `json:"extents,omitempty"`
	// IndexSize is the byte size of the index, so a reader can fetch it
	// into one exactly sized buffer.
	IndexSize int64 `json:"indexSize"`
	// GraphQLSize is the byte size of graphql-schema.json; 0 for content
	// written before it existed.
	GraphQLSize int64 `json:"graphqlSize,omitempty"`
	// FilesSize is the byte size of the per-file summary a later sync
	// reuses (see SetFiles); 0 when the content has none.
	FilesSize int64          `json:"filesSize,omitempty"`
	Schemas   map[string]int `json:"schemas"`
	Created   time.Time      `json:"created"`
	// Stats is free-form, for timings and the like.
	Stats map[string]any `json:"stats,omitempty"`
	// VerifiedBy says what verified the image's signature when the
	// signature policy required one (no key material, no secret); empty
	// otherwise and in content written before it existed.
	VerifiedBy string `json:"verifiedBy,omitempty"`
}

// HasContent reports whether the content of name at digest is complete: its
// meta.json exists, parses and describes that digest. A missing or
// unusable meta.json is (Meta{}, false, nil), meaning "write it (again)";
// errors are store failures only.
func HasContent(ctx context.Context, s storage.Store, name, digest string) (Meta, bool, error) {
	if err := checkName(name); err != nil {
		return Meta{}, false, err
	}
	if err := checkDigest(digest); err != nil {
		return Meta{}, false, err
	}
	m, err := readMeta(ctx, s, name, digest)
	switch {
	case errors.Is(err, storage.ErrNotExist), errors.Is(err, ErrCorrupt), errors.Is(err, ErrFormat):
		return Meta{}, false, nil
	case err != nil:
		return Meta{}, false, err
	}
	return m, true, nil
}

func readMeta(ctx context.Context, s storage.Store, name, digest string) (Meta, error) {
	key := contentPrefix(name, digest) + metaFile
	b, err := readSmall(ctx, s, key)
	if err != nil {
		return Meta{}, err
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return Meta{}, fmt.Errorf("catalog: %s: %w: %v", key, ErrCorrupt, err)
	}
	switch {
	case m.Format != metaFormat && m.Format != sharedFormat:
		return Meta{}, fmt.Errorf("catalog: %s: format %d: %w", key, m.Format, ErrFormat)
	case m.Format == metaFormat && len(m.Extents) > 0:
		return Meta{}, fmt.Errorf("catalog: %s: extents in format %d: %w", key, m.Format, ErrCorrupt)
	case m.Format == sharedFormat:
		if err := checkExtents(m); err != nil {
			return Meta{}, fmt.Errorf("catalog: %s: %s: %w", key, err, ErrCorrupt)
		}
	}
	if m.Digest != digest || m.Name != name || m.Size < 0 || m.Objects < 0 ||
		m.IndexSize < indexHeader+4 || m.IndexSize > maxIndex {
		return Meta{}, fmt.Errorf("catalog: %s describes %s %s: %w", key, m.Name, m.Digest, ErrCorrupt)
	}
	return m, nil
}

// maxIndex bounds the index a reader loads; 15k objects take 0.6 MB.
const maxIndex = 1 << 30

// maxSmall bounds what readSmall accepts: pointers and meta are a few
// hundred bytes, so anything near this is not ours.
const maxSmall = 1 << 20

// readSmall reads a whole small object.
func readSmall(ctx context.Context, s storage.Store, key string) ([]byte, error) {
	rc, err := s.Get(ctx, key, 0, maxSmall+1)
	if err != nil {
		return nil, err
	}
	return readAllSmall(rc, key)
}

// readAllSmall reads and closes rc, opened for at most maxSmall+1 bytes.
func readAllSmall(rc io.ReadCloser, key string) ([]byte, error) {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("catalog: read %s: %w", key, err)
	}
	if len(b) > maxSmall {
		return nil, fmt.Errorf("catalog: %s larger than %d bytes: %w", key, maxSmall, ErrCorrupt)
	}
	return b, nil
}

// Writer stores one catalog's content. Lines stream straight into the
// store (catalog.jsonl is never held in memory); the writer keeps only a
// small record per object for the index. Not safe for concurrent use.
//
// Call Commit or Abort exactly once; Abort after Commit is a no-op, so
// `defer w.Abort()` is the usual pattern.
type Writer struct {
	store        storage.Store
	name, digest string
	prefix       string

	cancel context.CancelFunc
	pw     *io.PipeWriter
	bw     *bufio.Writer
	sum    hash.Hash
	done   chan putResult
	res    *putResult // the content Put's outcome, once collected

	ids  map[string]uint32
	strs []string
	objs []object
	size int64
	gql  *gqlshape.Background
	// files is the per-file summary stored at Commit (SetFiles).
	files []byte

	// contentKey is catalog.jsonl, or delta.jsonl when sharing: then
	// extents describe catalog.jsonl, own names delta.jsonl in them, phys
	// counts its bytes and from maps the earlier content shared from.
	contentKey string
	own        string
	shareFrom  *Meta
	sharing    bool
	from       extentMap
	extents    []Extent
	phys       int64

	// ctx is the writer's own (cancelled by Abort); side delivers the
	// index, GraphQL schema and summary writes, started once the content
	// ended.
	ctx     context.Context
	side    chan sideResult
	sideRes *sideResult

	closed bool
	ended  bool  // EndContent was called: catalog.jsonl takes no more lines
	endErr error // what ending it returned
	err    error // sticky failure of Add
}

type putResult struct {
	info storage.Info
	err  error
}

// NewWriter starts writing the content of name at digest. ctx bounds the
// whole streaming upload; cancelling it fails the writer.
//
// Check HasContent first: rewriting complete content replaces its files
// under readers that have it open, which is harmless only because the same
// digest yields the same bytes.
func NewWriter(ctx context.Context, s storage.Store, name, digest string, opts ...WriterOption) (*Writer, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := checkDigest(digest); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := &Writer{store: s, name: name, digest: digest, prefix: contentPrefix(name, digest)}
	for _, o := range opts {
		o(w)
	}
	if err := w.startSharing(ctx); err != nil {
		return nil, fmt.Errorf("catalog: sharing from %s: %w", w.shareFrom.Digest, err)
	}
	w.contentKey = w.prefix + contentFile
	if w.sharing {
		w.contentKey, w.own = w.prefix+deltaFile, digestDir(digest)+"/"+deltaFile
	}
	pctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	w.ctx, w.cancel, w.pw, w.bw, w.sum = pctx, cancel, pw, bufio.NewWriterSize(pw, 256<<10), sha256.New()
	w.done = make(chan putResult, 1)
	w.ids, w.strs = map[string]uint32{"": 0}, []string{""}
	w.gql = gqlshape.NewBackground()
	go func() {
		in, err := s.Put(pctx, w.contentKey, pr)
		if err != nil {
			// Unblocks an Add waiting on the pipe.
			pr.CloseWithError(err)
		} else {
			pr.Close()
		}
		w.done <- putResult{in, err}
	}()
	return w, nil
}

func (w *Writer) intern(s string) uint32 {
	id, ok := w.ids[s]
	if !ok {
		// Clone: s may be a slice of a much larger string the caller
		// would otherwise keep alive through us.
		s = strings.Clone(s)
		id = uint32(len(w.strs))
		w.ids[s] = id
		w.strs = append(w.strs, s)
	}
	return id
}

// Add appends one object: its schema, package and name as the metas query
// matches them ("" when it has none) and its normalized JSON line, which
// must end in its only "\n".
func (w *Writer) Add(schema, pkg, name string, line []byte) error {
	if err := w.AddShaped(schema, pkg, name, line); err != nil {
		return err
	}
	w.gql.Observe(schema, line)
	return nil
}

// AddShaped is Add for a line whose GraphQL shape the caller supplies:
// after the lines of one file, MergeShape the shape of those lines.
func (w *Writer) AddShaped(schema, pkg, name string, line []byte) error {
	if w.closed || w.ended {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	return w.add(schema, pkg, name, line)
}

// MergeShape adds the shape of the lines added since the last Add or
// MergeShape with AddShaped, as observing them would.
func (w *Writer) MergeShape(s *gqlshape.Shape) {
	if !w.closed && w.err == nil {
		w.gql.Merge(s)
	}
}

func (w *Writer) add(schema, pkg, name string, line []byte) error {
	if len(line) == 0 || int64(len(line)) > maxLine || bytes.IndexByte(line, '\n') != len(line)-1 {
		return fmt.Errorf("catalog: object %d (%s %s %s): %w", len(w.objs), schema, pkg, name, ErrInvalidLine)
	}
	if w.sharing {
		w.appendExtent(Extent{Object: w.own, Off: w.phys, Len: int64(len(line))})
	} else {
		w.sum.Write(line)
	}
	if _, err := w.bw.Write(line); err != nil {
		w.err = fmt.Errorf("catalog: writing %s: %w", w.contentKey, err)
		return w.err
	}
	w.phys += int64(len(line))
	w.objs = append(w.objs, object{w.intern(schema), w.intern(pkg), w.intern(name), int64(len(line))})
	w.size += int64(len(line))
	return nil
}

// collect waits for the content Put, once.
func (w *Writer) collect(ctx context.Context) putResult {
	return awaitOnce(ctx, w.cancel, w.done, &w.res, func(r *putResult) *error { return &r.err })
}

// awaitOnce receives the outcome of the writer's work from ch once and
// keeps it in *got. When ctx ends first it cancels the work, waits for it
// to stop, and gives ctx's error unless the work failed anyway.
func awaitOnce[T any](ctx context.Context, cancel func(), ch <-chan T, got **T, errOf func(*T) *error) T {
	if *got == nil {
		var r T
		select {
		case r = <-ch:
		case <-ctx.Done():
			cancel()
			r = <-ch
			if e := errOf(&r); *e == nil {
				*e = ctx.Err()
			}
		}
		*got = &r
	}
	return **got
}

// Commit finishes catalog.jsonl, then writes the index, then meta.json,
// whose presence marks the content complete. m supplies Ref, Created (now
// when zero) and Stats; the writer fills in the rest and returns the meta
// it stored. On error nothing is marked complete.
func (w *Writer) Commit(ctx context.Context, m Meta) (Meta, error) {
	if w.closed {
		return Meta{}, ErrClosed
	}
	w.closed = true
	defer w.cancel()
	defer w.gql.Stop()
	if err := w.endContent(); err != nil {
		w.abort()
		return Meta{}, err
	}
	res := w.collect(ctx)
	side := w.sideWait(ctx)
	if res.err != nil {
		return Meta{}, fmt.Errorf("catalog: writing %s: %w", w.contentKey, res.err)
	}
	if res.info.Size != w.phys {
		return Meta{}, fmt.Errorf("catalog: store wrote %d of %d bytes of %s", res.info.Size, w.phys, w.contentKey)
	}
	if side.err != nil {
		return Meta{}, side.err
	}
	idx, gqlSize, filesSize := side.idx, side.gqlSize, side.filesSize
	m.Format, m.GraphQLSize, m.FilesSize = metaFormat, gqlSize, filesSize
	m.Name, m.Digest = w.name, w.digest
	m.Objects, m.Size, m.IndexSize = len(w.objs), w.size, int64(len(idx))
	m.SHA256, m.Extents = hex.EncodeToString(w.sum.Sum(nil)), nil
	if w.sharing {
		m.Format, m.SHA256, m.Extents = sharedFormat, "", w.extents
	}
	m.Schemas = map[string]int{}
	for _, o := range w.objs {
		m.Schemas[w.strs[o.schema]]++
	}
	if m.Created.IsZero() {
		m.Created = time.Now().UTC()
	}
	b, err := json.Marshal(m)
	if err != nil {
		return Meta{}, fmt.Errorf("catalog: meta: %w", err)
	}
	if _, err := w.store.Put(ctx, w.prefix+metaFile, bytes.NewReader(append(b, '\n'))); err != nil {
		return Meta{}, fmt.Errorf("catalog: writing meta: %w", err)
	}
	return m, nil
}

// EndContent ends catalog.jsonl before Commit: the store finishes writing
// it (on fs the fsync, on S3 the last part and the upload's completion)
// while the caller goes on, e.g. validating what it wrote; Commit then
// waits for what is left. Lines cannot be added after it. On error the
// caller aborts.
func (w *Writer) EndContent() error {
	if w.closed || w.ended {
		return ErrClosed
	}
	return w.endContent()
}

func (w *Writer) endContent() error {
	if !w.ended {
		w.ended = true
		w.endErr = w.end()
	}
	return w.endErr
}

func (w *Writer) end() error {
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("catalog: writing %s: %w", w.contentKey, err)
	}
	if err := w.pw.Close(); err != nil {
		return err
	}
	w.startSide()
	return nil
}

// sideResult is what the side writes stored.
type sideResult struct {
	idx                []byte
	gqlSize, filesSize int64
	err                error
}

// startSide writes the index, GraphQL schema and summary, which depend
// only on the lines added: from EndContent they are written while the
// caller validates and the store finishes catalog.jsonl (on fs its
// fsync); meta.json, which marks the content complete, waits for all.
func (w *Writer) startSide() {
	w.side = make(chan sideResult, 1)
	go func() {
		var r sideResult
		g, gctx := errgroup.WithContext(w.ctx)
		g.Go(func() error {
			r.idx = encodeIndex(w.strs, w.objs, w.size)
			if _, err := w.store.Put(gctx, w.prefix+indexFile, bytes.NewReader(r.idx)); err != nil {
				return fmt.Errorf("catalog: writing index: %w", err)
			}
			return nil
		})
		g.Go(func() (err error) { r.gqlSize, err = w.putGraphQL(gctx); return err })
		g.Go(func() (err error) { r.filesSize, err = w.putFiles(gctx); return err })
		r.err = g.Wait()
		w.side <- r
	}()
}

// sideWait waits for the side writes, once.
func (w *Writer) sideWait(ctx context.Context) sideResult {
	return awaitOnce(ctx, w.cancel, w.side, &w.sideRes, func(r *sideResult) *error { return &r.err })
}

// Abort stops the upload and waits for it to end. The store's Put leaves
// no partial catalog.jsonl, and no meta.json is written, so nothing of an
// aborted writer is ever taken as complete.
func (w *Writer) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	w.abort()
}

func (w *Writer) abort() {
	w.gql.Stop()
	w.cancel()
	w.pw.CloseWithError(ErrClosed)
	w.collect(context.Background())
	if w.side != nil {
		w.sideWait(context.Background())
	}
	if w.ended {
		// The index and summary may be stored even when catalog.jsonl
		// failed.
		w.dropContent()
	}
}

// dropContent removes a catalog.jsonl that EndContent let the store
// complete, so a catalog refused after it leaves no content behind. It
// keeps one whose meta.json exists: complete content of the same digest,
// which this writer only rewrote with the same bytes.
func (w *Writer) dropContent() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := w.store.Stat(ctx, w.prefix+metaFile); !errors.Is(err, storage.ErrNotExist) {
		return
	}
	// Best effort: GC removes them otherwise.
	for _, key := range []string{w.contentKey, w.prefix + indexFile, w.prefix + graphqlFile, w.prefix + filesFile} {
		_ = w.store.Delete(ctx, key)
	}
}

// Query selects objects as catalogd's /api/v1/metas does: each non-empty
// field must equal the object's, empty fields match anything.
type Query struct {
	Schema, Package, Name string
}

// Catalog is opened content, ready to answer queries. It is immutable and
// safe for concurrent use; the index is held in memory.
type Catalog struct {
	Name string
	// Pointer is the pointer Open followed (zero after OpenDigest).
	Pointer Pointer
	Meta    Meta
	// ReadGap lets Query fetch matches separated by at most ReadGap
	// unmatched bytes with one ranged Get, dropping the gap: on S3 one
	// request costs more than a few KB. 0 reads exactly the matches. Set
	// it before sharing the Catalog.
	ReadGap int64

	store storage.Store
	// where names the content in errors: its catalog.jsonl, or for shared
	// content its delta.jsonl and the lines it shares.
	where string
	idx   *index
}

// Open opens the catalog name's published content: it follows the current
// pointer and loads meta.json and the index, never catalog.jsonl. A never
// published catalog is an error wrapping storage.ErrNotExist.
func Open(ctx context.Context, s storage.Store, name string) (*Catalog, error) {
	p, _, err := Current(ctx, s, name)
	if err != nil {
		return nil, err
	}
	c, err := OpenDigest(ctx, s, name, p.Digest)
	if err != nil {
		return nil, err
	}
	c.Pointer = p
	return c, nil
}

// OpenDigest opens the complete content of name at digest, published or
// not.
func OpenDigest(ctx context.Context, s storage.Store, name, digest string) (*Catalog, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := checkDigest(digest); err != nil {
		return nil, err
	}
	m, err := readMeta(ctx, s, name, digest)
	if errors.Is(err, storage.ErrNotExist) {
		return nil, fmt.Errorf("catalog: %s at %s: %w", name, digest, ErrIncomplete)
	}
	if err != nil {
		return nil, err
	}
	prefix := contentPrefix(name, digest)
	rc, err := s.Get(ctx, prefix+indexFile, 0, m.IndexSize+1)
	if errors.Is(err, storage.ErrNotExist) {
		// Not "never published": meta.json promised an index.
		return nil, fmt.Errorf("catalog: %s at %s: index missing: %w", name, digest, ErrCorrupt)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: %s index: %w", name, err)
	}
	// One byte more than expected, to notice an index longer than meta
	// says.
	b := make([]byte, m.IndexSize+1)
	n, err := io.ReadFull(rc, b)
	rc.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("catalog: %s index: %w", name, err)
	}
	if int64(n) != m.IndexSize {
		return nil, fmt.Errorf("catalog: %s at %s: index is not the %d bytes meta says: %w", name, digest, m.IndexSize, ErrCorrupt)
	}
	idx, err := parseIndex(b[:n])
	if err != nil {
		return nil, err
	}
	if idx.size != m.Size || len(idx.entries) != m.Objects {
		return nil, fmt.Errorf("catalog: %s at %s: index has %d objects in %d bytes, meta %d in %d: %w",
			name, digest, len(idx.entries), idx.size, m.Objects, m.Size, ErrCorrupt)
	}
	where := prefix + contentFile
	if m.Format == sharedFormat {
		where = prefix + deltaFile + " and the lines it shares"
	}
	return &Catalog{Name: name, Meta: m, store: s, where: where, idx: idx}, nil
}

// All returns the whole catalog.jsonl (Meta.Size bytes).
func (c *Catalog) All(ctx context.Context) (io.ReadCloser, error) {
	return c.OpenRange(ctx, 0, c.Meta.Size)
}

// OpenRange returns n bytes of catalog.jsonl from off, which must lie
// within Meta.Size. A missing object is an error of OpenRange, not of the
// first Read, so a server can still answer with an error status.
func (c *Catalog) OpenRange(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	return openContent(ctx, c.store, c.Meta, off, n)
}

// Count returns how many objects and bytes Query would write for q, from
// the index alone (for Content-Length, or a 404 on no match).
func (c *Catalog) Count(q Query) (objects int, bytes int64) {
	spans, objects := c.idx.match(q)
	for _, s := range spans {
		bytes += s.n
	}
	return objects, bytes
}

// Query writes the lines of the objects matching q to w, in catalog order.
// It reads only the matching byte ranges of catalog.jsonl (with ReadGap,
// plus gaps up to that size), one ranged Get per run of adjacent matches.
func (c *Catalog) Query(ctx context.Context, w io.Writer, q Query) error {
	spans, _ := c.idx.match(q)
	var groups [][]span
	for len(spans) > 0 {
		// One fetch covers spans whose gaps are within ReadGap.
		k := 1
		for k < len(spans) && spans[k].off-(spans[k-1].off+spans[k-1].n) <= c.ReadGap {
			k++
		}
		groups = append(groups, spans[:k])
		spans = spans[k:]
	}
	if len(groups) == 1 {
		return c.fetchGroup(ctx, w, groups[0])
	}
	return c.fetchParallel(ctx, w, groups)
}

// Scattered matches (one package object per package, say) would cost a
// round trip each against object storage: small runs are fetched ahead,
// a few at a time, and written in order. Large runs stream in turn.
const (
	prefetchRuns    = 8
	prefetchMaxSize = 1 << 20
)

type prefetch struct {
	buf  bytes.Buffer
	err  error
	done chan struct{}
}

func (c *Catalog) fetchParallel(ctx context.Context, w io.Writer, groups [][]span) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make(chan struct{}, prefetchRuns)
	ahead := make([]*prefetch, len(groups))
	ready := make(chan int, len(groups)) // group indexes, in order, once launched (or large)
	go func() {
		defer close(ready)
		for i, g := range groups {
			if groupSize(g) > prefetchMaxSize {
				ready <- i
				continue
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			pf := &prefetch{done: make(chan struct{})}
			ahead[i] = pf
			go func() {
				defer close(pf.done)
				pf.err = c.fetchGroup(ctx, &pf.buf, g)
			}()
			ready <- i
		}
	}()
	for i := range ready {
		pf := ahead[i]
		if pf == nil {
			if err := c.fetchGroup(ctx, w, groups[i]); err != nil {
				return err
			}
			continue
		}
		<-pf.done
		<-slots
		if pf.err != nil {
			return pf.err
		}
		if _, err := w.Write(pf.buf.Bytes()); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func groupSize(g []span) int64 {
	last := g[len(g)-1]
	return last.off + last.n - g[0].off
}

func (c *Catalog) fetchGroup(ctx context.Context, w io.Writer, g []span) error {
	start, last := g[0].off, g[len(g)-1]
	return c.fetch(ctx, w, start, last.off+last.n-start, g)
}

func (c *Catalog) fetch(ctx context.Context, w io.Writer, off, n int64, spans []span) error {
	rc, err := openContent(ctx, c.store, c.Meta, off, n)
	if err != nil {
		return fmt.Errorf("catalog: %s: %w", c.where, err)
	}
	defer rc.Close()
	pos := off
	for _, s := range spans {
		if gap := s.off - pos; gap > 0 {
			if _, err := io.CopyN(io.Discard, rc, gap); err != nil {
				return c.readErr(err)
			}
		}
		if _, err := io.CopyN(w, rc, s.n); err != nil {
			return c.readErr(err)
		}
		pos = s.off + s.n
	}
	return nil
}

func (c *Catalog) readErr(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("catalog: %s shorter than its index: %w", c.where, ErrCorrupt)
	}
	return fmt.Errorf("catalog: %s: %w", c.where, err)
}
