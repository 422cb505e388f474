package pipeline

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/catalog/gqlshape"
	"github.com/catalogsync/catalogsync/sync/fbc"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/sync/unpack"
)

// objRec locates one parsed object in the spool.
type objRec struct {
	obj fbc.Object // Blob cleared: only what validation and the index need
	off int64
	n   int
}

// fileResult is what parsing one file produced. A parse error is kept, not
// returned, because .indexignore may still exclude the file.
type fileResult struct {
	objs []objRec
	err  error
	seq  int // which handle call parsed it
	// sum is the file's sha256 when hashed (files read whole are); a
	// later sync reuses only hashed files.
	sum    [32]byte
	hashed bool
	// reused holds the earlier content's facts when the file's bytes
	// were summarised there: objs is then empty, unless the pool
	// verifies reuse, which parses the file too.
	reused  *fileFacts
	checked bool // reused, and parsed too (WithVerifyReuse)
	// shape is the GraphQL shape of the parsed objects (gqlshape JSON),
	// discovered on the parse worker; shaped is the same shape as it
	// was discovered, which the streamer merges instead of decoding
	// shape again (1% of a full sync's CPU).
	shape  []byte
	shaped *gqlshape.Shape
	// written is where the streamer recorded the file's facts once it
	// wrote the file: objs and shape are dropped then, lines keeping
	// where each object lies in the spool, and what validation or a
	// rewrite needs is read back from the record (parsedFacts). Held in
	// memory to the end, they grew with the catalog (7 MB at 222 MB).
	written *factsAt
	lines   []int64
	// mu guards objs, shape, written and lines once the parse is done:
	// the streamer drops them while validation reads them.
	mu sync.Mutex
}

// drop replaces a written file's objects with their record at at.
func (fr *fileResult) drop(at *factsAt) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	fr.lines = make([]int64, len(fr.objs))
	for i, o := range fr.objs {
		fr.lines[i] = o.off
	}
	fr.objs, fr.shape, fr.shaped, fr.written = nil, nil, nil, at
}

// parsed returns a parsed file's objects, or their record once the
// streamer dropped them (then objs is nil).
func (fr *fileResult) parsed() ([]objRec, *factsAt) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return fr.objs, fr.written
}

// parsedShape returns the shape as discovered, nil once dropped.
func (fr *fileResult) parsedShape() *gqlshape.Shape {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return fr.shaped
}

// parsedFacts returns a parsed file's objects as facts, where each lies
// in the spool and its GraphQL shape: from objs, or from its record once
// they were dropped.
func (fr *fileResult) parsedFacts() ([]objFact, []int64, []byte, error) {
	fr.mu.Lock()
	written, lines, objs, shape := fr.written, fr.lines, fr.objs, fr.shape
	fr.mu.Unlock()
	if written != nil {
		f, err := written.read()
		if err == nil && len(f.Objects) != len(lines) {
			err = fmt.Errorf("%w: %d objects recorded, %d written", errFacts, len(f.Objects), len(lines))
		}
		if err != nil {
			return nil, nil, nil, err
		}
		return f.Objects, lines, f.Shape, nil
	}
	facts, offs := make([]objFact, len(objs)), make([]int64, len(objs))
	for i, o := range objs {
		facts[i], offs[i] = objFact{o.obj.Schema, o.obj.Package, o.obj.Name, int64(o.n), o.obj.Ref}, o.off
	}
	return facts, offs, shape, nil
}

// spool holds parsed objects on local disk until the final file order is
// known, so memory does not grow with the catalog.
type spool struct {
	mu      sync.Mutex
	f       *os.File
	w       *bufio.Writer
	size    int64
	flushed int64
	gone    sync.Once
}

// newSpool makes a spool in dir whose writes are buffered by buf bytes.
func newSpool(dir string, buf int) (*spool, error) {
	f, err := os.CreateTemp(dir, "catalogsync-spool-*")
	if err != nil {
		return nil, err
	}
	return &spool{f: f, w: bufio.NewWriterSize(f, buf)}, nil
}

// remove closes and deletes the spool file, once; a second call returns
// when the first is done.
func (s *spool) remove() {
	s.gone.Do(func() {
		s.f.Close()
		os.Remove(s.f.Name())
	})
}

func (s *spool) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushed = s.size
	return s.w.Flush()
}

// readAt reads what append wrote, flushing the buffer first if needed.
func (s *spool) readAt(b []byte, off int64) error {
	if err := s.flushTo(off + int64(len(b))); err != nil {
		return err
	}
	_, err := s.f.ReadAt(b, off)
	return err
}

// section returns the n bytes append wrote at off, as a reader.
func (s *spool) section(off, n int64) (io.Reader, error) {
	if err := s.flushTo(off + n); err != nil {
		return nil, err
	}
	return io.NewSectionReader(s.f, off, n), nil
}

// flushTo flushes the buffer if it holds bytes before end.
func (s *spool) flushTo(end int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if end > s.flushed {
		if err := s.w.Flush(); err != nil {
			return err
		}
		s.flushed = s.size
	}
	return nil
}

func (s *spool) append(b []byte) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	off := s.size
	n, err := s.w.Write(b)
	s.size += int64(n)
	return off, err
}

// parsePool parses the FBC files of one pull into a spool. A file up to
// inline bytes is read whole and parsed on a worker goroutine while the
// next ones stream in, budget capping the bytes of files waiting or in
// parse; a larger file waits on local disk instead (addLarge).
type parsePool struct {
	sp      *spool
	scratch *scratchFiles // where files above inline wait for their parse
	inline  int64
	budget  *semaphore.Weighted
	total   int64 // the budget's size
	workers *semaphore.Weighted
	wg      sync.WaitGroup
	bufs    *fileBufs // what files up to inline are read into
	chunks  chunks    // what parse workers gather lines in
	// stageBuf copies larger files to scratch files (reading goroutine
	// only).
	stageBuf []byte
	parsers  parsers
	large    sync.Mutex // fbc.OneLargeAtATime
	seq      int        // files handed in so far (reading goroutine only)

	reuse  *reuseSet // the published content's summary, if any
	verify bool      // parse reused files too, to compare (WithVerifyReuse)
	stream *streamer // writes the content as files arrive (see streamer)

	mu      sync.Mutex
	results map[string]*fileResult // by path: the latest entry's
	err     error                  // a spool write failure: fatal, unlike parse errors
}

func newParsePool(sp *spool, tmpDir string, budget, inline int64, workers int) *parsePool {
	return &parsePool{sp: sp, scratch: newScratchFiles(tmpDir, workers), inline: inline, budget: semaphore.NewWeighted(budget), total: budget,
		workers: semaphore.NewWeighted(int64(workers)), bufs: newFileBufs(budget),
		results: map[string]*fileResult{}}
}

// reuseFrom makes the pool skip the files rs summarises.
func (pp *parsePool) reuseFrom(rs *reuseSet, verify bool) {
	pp.reuse, pp.verify = rs, verify
}

// handler returns the unpack.FileFunc that feeds the pool under ctx.
func (pp *parsePool) handler(ctx context.Context) unpack.FileFunc {
	return func(path string, size int64, r io.Reader) error { return pp.add(ctx, path, size, r) }
}

// add starts one file's parse; a path given twice keeps the later entry.
func (pp *parsePool) add(ctx context.Context, path string, size int64, r io.Reader) error {
	pp.seq++
	if size > pp.inline {
		return pp.addLarge(ctx, path, size, r, pp.seq)
	}
	seq := pp.seq
	// The budget counts what the buffer really takes: its size class.
	w := min(int64(1)<<sizeClass(size), pp.total)
	if err := pp.budget.Acquire(ctx, w); err != nil {
		return err
	}
	buf := pp.bufs.get(size)
	if _, err := io.ReadFull(r, buf); err != nil {
		pp.bufs.put(buf)
		pp.budget.Release(w)
		return fmt.Errorf("read %s: %w", path, err)
	}
	return pp.parseOn(ctx, path, seq, func() [32]byte { return sha256.Sum256(buf) },
		false, func(x *fbc.Parser, fn func(fbc.Object) error) error {
			return x.ParseBytes(buf, fn, fbc.BorrowBlobs(), fbc.OneLargeAtATime(&pp.large))
		},
		func() { pp.bufs.put(buf) }, func() { pp.budget.Release(w) })
}

// parseOn parses one file on a worker once one is free, in the file's
// place in the stream, hashing it there (sum) unless it is reused. free
// gives back what holds the file's bytes, before the result is kept;
// release what else the file held, last. Both run when no worker comes.
func (pp *parsePool) parseOn(ctx context.Context, path string, seq int, sum func() [32]byte,
	large bool, parse parseFunc, free, release func()) error {
	if err := pp.workers.Acquire(ctx, 1); err != nil {
		free()
		release()
		return err
	}
	sl := pp.stream.enqueue(path)
	pp.wg.Add(1)
	go func() {
		defer pp.wg.Done()
		defer release()
		defer pp.workers.Release(1)
		fr := pp.parseOrReuse(ctx, sum(), seq, large, parse)
		free()
		pp.keep(path, fr, sl)
	}()
	return nil
}

// parseOrReuse parses a file whose bytes hash to sum with parse, unless
// the published content has the same bytes.
func (pp *parsePool) parseOrReuse(ctx context.Context, sum [32]byte, seq int, large bool, parse parseFunc) *fileResult {
	var fr *fileResult
	if f := pp.reuse.lookup(ctx, sum); f != nil && !pp.verify {
		fr = &fileResult{seq: seq, reused: f}
	} else {
		fr = pp.parse(seq, large, parse)
		fr.reused, fr.checked = f, f != nil
	}
	fr.sum, fr.hashed = sum, true
	return fr
}

// parseFunc parses one file with x, lending blobs to fn.
type parseFunc func(x *fbc.Parser, fn func(fbc.Object) error) error

// parse runs parse with one of the pool's parsers (see parsers.get for
// large) and a callback that spools each object and observes its shape.
func (pp *parsePool) parse(seq int, large bool, parse parseFunc) *fileResult {
	fr := &fileResult{seq: seq}
	shape := gqlshape.New()
	x := pp.parsers.get(large)
	defer pp.parsers.put(x)
	cw := &chunkWriter{sp: pp.sp, buf: pp.chunks.get()}
	defer func() { pp.chunks.put(cw.buf) }()
	spoolErr := func(err error) error {
		pp.mu.Lock()
		pp.err = err
		pp.mu.Unlock()
		return err
	}
	fr.err = parse(x, func(o fbc.Object) error {
		gqlshape.ObserveTree(shape, o.Schema, o.Root, o.Blob)
		rec := objRec{obj: o, n: len(o.Blob)}
		rec.obj.Blob, rec.obj.Root = nil, fbc.Value{}
		if err := cw.add(fr, rec, o.Blob); err != nil {
			return spoolErr(err)
		}
		return nil
	})
	if err := cw.flush(fr); err != nil {
		err = spoolErr(err)
		if fr.err == nil {
			fr.err = err
		}
	}
	if fr.err == nil {
		fr.shape, fr.err = shape.Marshal()
		fr.shaped = shape
	}
	return fr
}

// parsers are the pool's parsers between files. Only one may keep the
// buffers a large document grew (fbc.Parser.Large), and it goes to a
// file that may hold one: every parser keeping them held 5 MB or more
// each between the few such documents, and trimming them all grew those
// buffers again for each, 90 MB more allocated for the 222 MB catalog.
type parsers struct {
	mu    sync.Mutex
	large *fbc.Parser
	small []*fbc.Parser
}

// get returns a parser for a file that may hold a large document (one
// above the inline size) or not; the large parser only when it is free.
func (ps *parsers) get(large bool) *fbc.Parser {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.large != nil && (large || len(ps.small) == 0) {
		x := ps.large
		ps.large = nil
		return x
	}
	if n := len(ps.small); n > 0 {
		x := ps.small[n-1]
		ps.small = ps.small[:n-1]
		return x
	}
	return fbc.NewParser()
}

// put keeps x for the next file, trimmed unless it is the large one.
func (ps *parsers) put(x *fbc.Parser) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if x.Large() && ps.large == nil {
		ps.large = x
		return
	}
	x.Trim()
	ps.small = append(ps.small, x)
}

// keep records path's result, and hands it to the streamer's slot.
func (pp *parsePool) keep(path string, fr *fileResult, sl *slot) {
	sl.fill(fr)
	pp.mu.Lock()
	defer pp.mu.Unlock()
	// Parses run concurrently: the later entry wins, not the later parse.
	if old, ok := pp.results[path]; !ok || old.seq < fr.seq {
		pp.results[path] = fr
	}
}

// close lets go of what the parses kept between files, once they are
// done: validation, which holds the whole catalog's facts, follows.
func (pp *parsePool) close() {
	pp.scratch.close()
	pp.parsers = parsers{}
	pp.chunks = chunks{}
	pp.bufs = newFileBufs(0)
	pp.stageBuf = nil
}

// wait waits for the parses under way and returns a spool failure.
func (pp *parsePool) wait() error {
	pp.wg.Wait()
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.err
}

func spoolError(ph Phase, err error) error {
	return &Error{Phase: ph, Reason: ReasonInternal, Retryable: true, Err: fmt.Errorf("spool: %w", err)}
}

// pull streams the image's layers, parses, validates and writes its
// catalog (Pulling to Indexing). Nothing is published yet.
func (a *attempt) pull(ctx context.Context, resolved source.Resolved) (catalog.Meta, error) {
	meta, err := a.pullLayers(ctx, resolved)
	// Replicas sharing the store all hear the same webhook: the one
	// holding the sync lease pulls; if it loses the lease, it stops.
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, catalog.ErrLeaseLost) {
		return meta, storageError(PhasePulling, cause)
	}
	return meta, err
}

func (a *attempt) pullLayers(ctx context.Context, resolved source.Resolved) (catalog.Meta, error) {
	t := a.p.now()
	img, u, err := a.open(ctx, resolved)
	if err != nil {
		return catalog.Meta{}, err
	}
	sp, err := newSpool(a.p.tmpDir, 0) // written a chunk at a time (chunkWriter)
	if err != nil {
		return catalog.Meta{}, &Error{Phase: PhasePulling, Reason: ReasonInternal, Retryable: true, Err: err}
	}
	defer sp.remove()
	pool := newParsePool(sp, a.p.tmpDir, a.p.budget, a.p.inline, a.p.workers)
	if a.prev != nil && a.prev.FilesSize > 0 {
		pool.reuseFrom(a.p.loadReuse(ctx, *a.prev), a.p.verify)
	}
	if pool.stream, err = a.p.newStreamer(ctx, a.c.Name, a.res.Digest, sp, a.prev); err != nil {
		return catalog.Meta{}, err
	}
	defer pool.stream.cw.remove() // after the commit in index
	err = a.readLayers(ctx, img, u, pool)
	pool.close()
	if err != nil {
		pool.stream.stop()
		pool.stream.abort()
		return catalog.Meta{}, err
	}
	a.phase(PhasePulling, t)
	files, err := a.unpacked(u)
	if err != nil {
		pool.stream.stop()
		pool.stream.abort()
		return catalog.Meta{}, err
	}
	// Every file is parsed: validation reads each file's facts from its
	// parse, or from its record once written, while the streamer writes
	// the last files and the store takes them (on S3 the upload runs
	// behind the parse), rather than after.
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		pool.stream.stop()
		pool.stream.end()
		if pool.stream.check(files, pool.results) == nil {
			// The content is written whole: only a lost bet reads
			// the spool again. Its pages (the size of the catalog)
			// go while validation runs, not after.
			sp.remove()
		}
	}()
	v, err := a.validate(files, pool.results)
	<-streamed
	if err != nil {
		pool.stream.abort()
		return catalog.Meta{}, err
	}
	return a.index(ctx, img, v, pool)
}

// open fetches the image's manifest and makes its unpacker.
func (a *attempt) open(ctx context.Context, resolved source.Resolved) (*source.Image, *unpack.Unpacker, error) {
	img, err := a.p.src.Open(ctx, resolved)
	if err != nil {
		if errors.Is(err, source.ErrMissingLabel) {
			// A tag may be re-pushed with the label; a digest never changes.
			return nil, nil, &Error{Phase: PhasePulling, Reason: ReasonMissingLabel, Retryable: !resolved.Pinned, Err: err}
		}
		return nil, nil, registryError(PhasePulling, err)
	}
	u, err := unpack.New(img.ConfigsDir, a.p.limits)
	if err != nil {
		return nil, nil, &Error{Phase: PhasePulling, Reason: ReasonUnsafeImage, Err: err}
	}
	return img, u, nil
}

// readLayers streams the layers, top first, into the unpacker and the
// pool, and waits for the parses.
func (a *attempt) readLayers(ctx context.Context, img *source.Image, u *unpack.Unpacker, pool *parsePool) error {
	for i := len(img.Layers) - 1; i >= 0; i-- {
		if err := a.readLayer(ctx, img, i, u, pool); err != nil {
			_ = pool.wait() // the layer error comes first; wait only joins the parses
			return err
		}
	}
	if err := pool.wait(); err != nil {
		return spoolError(PhaseUnpacking, err)
	}
	if err := pool.sp.flush(); err != nil {
		return spoolError(PhaseUnpacking, err)
	}
	return nil
}

func (a *attempt) readLayer(ctx context.Context, img *source.Image, i int, u *unpack.Unpacker, pool *parsePool) error {
	l := img.Layers[i]
	ev := Event{Phase: PhasePulling, Layer: len(img.Layers) - i, Layers: len(img.Layers), LayerDigest: l.Digest, BytesTotal: l.Size}
	a.rep.emit(ev)
	lr, err := a.p.src.OpenLayer(ctx, img, i, func(done int64) {
		e := ev
		e.BytesDone = done
		a.rep.emit(e)
	})
	if err != nil {
		return layerError(err)
	}
	defer lr.Close()
	err = u.Layer(lr, pool.handler(ctx))
	if err == nil {
		err = lr.Finish()
	}
	a.res.BytesPulled += l.Size
	if err != nil {
		return layerError(err)
	}
	return nil
}

// index writes the catalog and its index under the digest (Indexing).
func (a *attempt) index(ctx context.Context, img *source.Image, v validated, pool *parsePool) (catalog.Meta, error) {
	t := a.p.now()
	a.rep.emit(Event{Phase: PhaseIndexing, Bundles: v.stats.Bundles, Packages: v.stats.Packages, Objects: v.objects})
	cw, lost := pool.stream.result(v)
	if lost != nil {
		a.p.log.Debug("content written after the pull", "catalog", a.c.Name, "why", lost)
		var err error
		if cw, err = a.p.writeFromSpool(ctx, a.c.Name, a.res.Digest, v, pool.sp, a.prev); err != nil {
			return catalog.Meta{}, err
		}
		defer cw.remove()
	}
	meta, err := cw.w.Commit(ctx, catalog.Meta{
		Ref: a.c.Image.String(), VerifiedBy: a.res.VerifiedBy,
		Stats: map[string]any{
			"resolvedRef":    a.res.ResolvedRef,
			"manifestDigest": img.ManifestDigest,
			"layers":         len(img.Layers),
			"bytesPulled":    a.res.BytesPulled,
			"packages":       v.stats.Packages,
			"channels":       v.stats.Channels,
			"bundles":        v.stats.Bundles,
			"files":          len(v.files),
			"filesReused":    v.reused,
			"streamed":       lost == nil,
		},
	})
	if err != nil {
		return catalog.Meta{}, storageError(PhaseIndexing, err)
	}
	a.phase(PhaseIndexing, t)
	return meta, nil
}

// writeFromSpool writes catalog.jsonl in the final file order, which is
// known only once every layer has been read: parsed files from the spool,
// reused ones from the published content (prev).
func (p *Pipeline) writeFromSpool(ctx context.Context, name, digest string, v validated, sp *spool, prev *catalog.Meta) (*contentWrite, error) {
	w, err := p.newWriter(ctx, name, digest, prev)
	if err != nil {
		return nil, storageError(PhaseIndexing, err)
	}
	cw, err := newContentWrite(w, p.store, sp, p.tmpDir, prev)
	if err != nil {
		w.Abort()
		return nil, err
	}
	defer cw.close()
	for _, file := range v.files {
		_, err = cw.file(ctx, file.Path, v.results[file.Content])
		if err == nil {
			continue
		}
		w.Abort()
		cw.remove()
		return nil, err
	}
	if err := cw.setFiles(); err != nil {
		w.Abort()
		cw.remove()
		return nil, err
	}
	return cw, nil
}
