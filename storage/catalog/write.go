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
	files *io.SectionReader

	// contentKey is catalog.jsonl, or delta.jsonl when sharing: then
	// extents describe catalog.jsonl, own names delta.jsonl in them, phys
	// counts its bytes and from maps the earlier content shared from.
	contentKey string
	own        string
	shareFrom  *Meta
	sharing    bool
	// static writes content for the static layout (Static).
	static  bool
	from    extentMap
	extents []Extent
	phys    int64

	// ctx is the writer's own (cancelled by Abort); side delivers the
	// index, GraphQL schema and summary writes, started once the content
	// ended.
	ctx     context.Context
	side    chan sideResult
	sideRes *sideResult

	chunk []byte // AddShapedFrom's, once it was called

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
		var h storage.Headers
		if w.static {
			h = JSONLHeaders
		}
		in, err := storage.PutHeaders(pctx, s, w.contentKey, pr, h)
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
	for _, key := range []string{w.contentKey, w.prefix + indexFile, w.prefix + graphqlFile, w.prefix + filesFile, w.prefix + gzipFile} {
		_ = w.store.Delete(ctx, key)
	}
}
