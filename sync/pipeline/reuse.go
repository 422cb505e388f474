package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/catalog/gqlshape"
	"github.com/catalogsync/catalogsync/sync/fbc"
)

// reuseSet is the per-file summary of the content a catalog's pointer is
// at, loaded while the new image's layers start streaming: a file whose
// bytes hash to a summarised file is not parsed again, its objects are
// copied from that content's catalog.jsonl (the same bytes always
// normalise to the same objects).
type reuseSet struct {
	meta  catalog.Meta // the earlier content
	ready chan struct{}
	files map[[32]byte]*fileFacts // read only after ready; empty when unusable
}

// loadReuse starts reading the summary stored with prev. Failing to read
// it costs the speed-up, never the sync: the files are parsed instead.
func (p *Pipeline) loadReuse(ctx context.Context, prev catalog.Meta) *reuseSet {
	rs := &reuseSet{meta: prev, ready: make(chan struct{})}
	go func() {
		defer close(rs.ready)
		files, err := readFacts(ctx, p.store, prev)
		if err != nil && !errors.Is(err, storage.ErrNotExist) {
			p.log.Warn("file summary of the published content unusable; parsing every file",
				"catalog", prev.Name, "digest", prev.Digest, "err", err)
			files = nil
		}
		rs.files = files
	}()
	return rs
}

// lookup returns the facts of the file whose sha256 is sum, or nil.
func (rs *reuseSet) lookup(ctx context.Context, sum [32]byte) *fileFacts {
	if rs == nil {
		return nil
	}
	select {
	case <-rs.ready:
	case <-ctx.Done():
		return nil
	}
	return rs.files[sum]
}

// readFacts reads a stored summary whole, checking every record against
// the content it describes.
func readFacts(ctx context.Context, s storage.Store, m catalog.Meta) (map[[32]byte]*fileFacts, error) {
	rc, err := catalog.OpenFiles(ctx, s, m)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(io.LimitReader(rc, m.FilesSize), 64<<10)
	files := map[[32]byte]*fileFacts{}
	var buf []byte
	for {
		n, err := binary.ReadUvarint(br)
		if err == io.EOF {
			return files, nil
		}
		if err != nil || n == 0 || n > maxFactsRecord {
			return nil, fmt.Errorf("%w: record length", errFacts)
		}
		if uint64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		if _, err := io.ReadFull(br, buf[:n]); err != nil {
			return nil, fmt.Errorf("%w: %v", errFacts, err)
		}
		f, err := decodeFacts(buf[:n])
		if err != nil {
			return nil, err
		}
		if f.Off > m.Size || f.Len > m.Size-f.Off {
			return nil, fmt.Errorf("%w: a record points past catalog.jsonl", errFacts)
		}
		if _, dup := files[f.Sum]; !dup {
			files[f.Sum] = f
		}
	}
}

// earlierLines reads the earlier catalog.jsonl from where the next reused
// file starts to its end: reused files that follow each other there and
// here are read with one ranged read (one request on object storage).
type earlierLines struct {
	store storage.Store
	meta  catalog.Meta
	rc    io.ReadCloser
	br    *bufio.Reader
	pos   int64 // offset of the next byte br yields
}

// at positions the reader at off, the start of the next reused file.
func (el *earlierLines) at(ctx context.Context, off int64) error {
	if el.br != nil && el.pos == off {
		return nil
	}
	el.close()
	rc, err := catalog.OpenLines(ctx, el.store, el.meta, off, el.meta.Size-off)
	if err != nil {
		return err
	}
	el.rc, el.br, el.pos = rc, bufio.NewReaderSize(rc, 256<<10), off
	return nil
}

// read fills b from the open run.
func (el *earlierLines) read(b []byte) error {
	if _, err := io.ReadFull(el.br, b); err != nil {
		return fmt.Errorf("reading the published catalog.jsonl: %w", err)
	}
	el.pos += int64(len(b))
	return nil
}

func (el *earlierLines) close() {
	if el.rc != nil {
		el.rc.Close()
		el.rc, el.br = nil, nil
	}
}

// sameFact reports whether a parsed object and a stored fact agree, in
// the summary's own encoding (so a nil and an empty list are the same).
func sameFact(o objRec, f objFact) bool {
	a := appendFacts(nil, &fileFacts{Len: int64(o.n), Objects: []objFact{{o.obj.Schema, o.obj.Package, o.obj.Name, int64(o.n), o.obj.Ref}}})
	b := appendFacts(nil, &fileFacts{Len: f.N, Objects: []objFact{f}})
	return bytes.Equal(a, b)
}

// addFacts feeds a reused file's objects to the validator, as parsing
// them would, and returns how many there were.
func addFacts(v *fbc.Validator, path string, f *fileFacts) int {
	for _, o := range f.Objects {
		v.Add(path, fbc.Object{Schema: o.Schema, Package: o.Package, Name: o.Name, Ref: o.Ref})
	}
	return len(f.Objects)
}

// reuseMismatch is what WithVerifyReuse reports when a reused file would
// not come out the same parsed: a bug of ours, never the catalog's.
func reuseMismatch(path string, err error) error {
	return &Error{Phase: PhaseIndexing, Reason: ReasonInternal, Err: fmt.Errorf("incremental check: %s: %w", path, err)}
}

// newWriter starts the content of name at digest; with prev (the
// published content reused from), it shares prev's lines rather than
// copying them where the store's content allows (catalog.ShareFrom).
func (p *Pipeline) newWriter(ctx context.Context, name, digest string, prev *catalog.Meta) (*catalog.Writer, error) {
	var opts []catalog.WriterOption
	if prev != nil {
		opts = append(opts, catalog.ShareFrom(*prev))
	}
	if p.static {
		// Whole, so the layout copies catalog.jsonl inside the store.
		opts = append(opts, catalog.Static())
	}
	return catalog.NewWriter(ctx, p.store, name, digest, opts...)
}

// newContentWrite writes into w, reading parsed files from sp and reused
// ones from prev (nil: none). Its summary waits in a file of its own in
// dir: it grows with the catalog (4 MB for 222 MB of FBC), and held in
// memory it was the largest part of a sync's heap that did.
func newContentWrite(w *catalog.Writer, s storage.Store, sp *spool, dir string, prev *catalog.Meta) (*contentWrite, error) {
	sum, err := newSpool(dir, 32<<10) // records of a few KB, one file's each
	if err != nil {
		return nil, spoolError(PhasePulling, err)
	}
	cw := &contentWrite{w: w, sp: sp, buf: make([]byte, 0, 64<<10), summary: sum}
	if prev != nil {
		cw.earlier = &earlierLines{store: s, meta: *prev}
	}
	return cw, nil
}

// close releases the earlier content's reader.
func (cw *contentWrite) close() {
	if cw.earlier != nil {
		cw.earlier.close()
	}
}

// remove deletes the summary's file: call it once the writer is
// committed or aborted, which may read it until then.
func (cw *contentWrite) remove() { cw.summary.remove() }

// setFiles hands the summary written so far to the writer.
func (cw *contentWrite) setFiles() error {
	if err := cw.summary.flush(); err != nil {
		return spoolError(PhaseIndexing, err)
	}
	cw.w.SetFiles(io.NewSectionReader(cw.summary.f, 0, cw.summary.size))
	return nil
}

// contentWrite writes one catalog.jsonl and its file summary.
type contentWrite struct {
	w       *catalog.Writer
	sp      *spool
	earlier *earlierLines // nil when nothing is reused
	buf     []byte
	summary *spool // the summary's records, in file order
	rec     []byte // one record being encoded
}

// file writes one file's objects and records its facts; it returns
// where the record lies, nil when the file has none.
func (cw *contentWrite) file(ctx context.Context, path string, fr *fileResult) (*factsAt, error) {
	facts := &fileFacts{Sum: fr.sum, Off: cw.w.Size()}
	var shaped *gqlshape.Shape
	var err error
	if fr.reused != nil {
		facts.Objects, facts.Shape = fr.reused.Objects, fr.reused.Shape
		err = cw.copyFile(ctx, path, fr)
	} else {
		var offs []int64
		shaped = fr.parsedShape()
		if facts.Objects, offs, facts.Shape, err = fr.parsedFacts(); err != nil {
			return nil, spoolError(PhaseIndexing, err)
		}
		err = cw.spoolFile(facts.Objects, offs)
	}
	if err != nil {
		return nil, err
	}
	if shaped != nil {
		cw.w.MergeShape(shaped)
	} else if err := cw.mergeShape(facts.Shape); err != nil {
		return nil, reuseMismatch(path, err)
	}
	if facts.Len = cw.w.Size() - facts.Off; !fr.hashed || facts.Len == 0 {
		return nil, nil
	}
	cw.rec = appendFacts(cw.rec[:0], facts)
	off, err := cw.summary.append(cw.rec)
	if err != nil {
		return nil, spoolError(PhaseIndexing, err)
	}
	return &factsAt{sp: cw.summary, off: off, n: len(cw.rec)}, nil
}

// keepLine bounds the line buffer kept for the next line: a line above it
// (a few per catalog, up to about 1 MB) goes from the spool a chunk at a
// time, or when copied from earlier content gets a buffer of its own,
// rather than the whole sync holding the largest line's size.
const keepLine = 256 << 10

// line returns a buffer for a line of n bytes, valid until the next call.
func (cw *contentWrite) line(n int) []byte {
	if n > keepLine {
		return make([]byte, n)
	}
	if cap(cw.buf) < n {
		cw.buf = make([]byte, n)
	}
	return cw.buf[:n]
}

// spoolFile adds a parsed file's objects, the line of objs[i] read from
// the spool at offs[i]: lines that lie together up to keepLine bytes in
// one read, a line above keepLine a chunk at a time.
func (cw *contentWrite) spoolFile(objs []objFact, offs []int64) error {
	for i := 0; i < len(objs); {
		o := objs[i]
		if o.N > keepLine {
			r, err := cw.sp.section(offs[i], o.N)
			if err != nil {
				return spoolError(PhaseIndexing, err)
			}
			if err := cw.w.AddShapedFrom(o.Schema, o.Package, o.Name, o.N, r); err != nil {
				return storageError(PhaseIndexing, err)
			}
			i++
			continue
		}
		j, end := i+1, offs[i]+o.N
		for j < len(objs) && offs[j] == end && end+objs[j].N-offs[i] <= keepLine {
			end += objs[j].N
			j++
		}
		b := cw.line(int(end - offs[i]))
		if err := cw.sp.readAt(b, offs[i]); err != nil {
			return spoolError(PhaseIndexing, err)
		}
		for k := i; k < j; k++ {
			at := offs[k] - offs[i]
			if err := cw.w.AddShaped(objs[k].Schema, objs[k].Package, objs[k].Name, b[at:at+objs[k].N]); err != nil {
				return storageError(PhaseIndexing, err)
			}
		}
		i = j
	}
	return nil
}

// copyFile adds a reused file's objects from the published content:
// shared (only their place is recorded) when the writer can, else copied;
// with fr.objs (WithVerifyReuse) it reads and checks them against the
// parse either way.
func (cw *contentWrite) copyFile(ctx context.Context, path string, fr *fileResult) error {
	f := fr.reused
	if cw.earlier == nil {
		return storageError(PhaseIndexing, errors.New("a reused file without the published content"))
	}
	if fr.checked && len(fr.objs) != len(f.Objects) {
		return reuseMismatch(path, fmt.Errorf("%d objects parsed, %d reused", len(fr.objs), len(f.Objects)))
	}
	if fr.checked && !bytes.Equal(fr.shape, f.Shape) {
		return reuseMismatch(path, fmt.Errorf("its GraphQL shape differs: parsed %.200s, reused %.200s", fr.shape, f.Shape))
	}
	share := cw.w.CanShare()
	read := fr.checked || !share
	if read {
		if err := cw.earlier.at(ctx, f.Off); err != nil {
			return storageError(PhaseIndexing, err)
		}
	}
	off := f.Off
	for i, o := range f.Objects {
		var b []byte
		if read {
			b = cw.line(int(o.N))
			if err := cw.earlier.read(b); err != nil {
				return storageError(PhaseIndexing, err)
			}
		}
		if fr.checked {
			if err := cw.compare(fr.objs[i], o, b); err != nil {
				return reuseMismatch(path, fmt.Errorf("object %d: %w", i, err))
			}
		}
		var err error
		if share {
			err = cw.w.AddShared(o.Schema, o.Package, o.Name, off, o.N)
		} else {
			err = cw.w.AddShaped(o.Schema, o.Package, o.Name, b)
		}
		if err != nil {
			return storageError(PhaseIndexing, err)
		}
		off += o.N
	}
	return nil
}

// compare checks a copied line and its fact against the parse of the
// same file.
func (cw *contentWrite) compare(o objRec, f objFact, copied []byte) error {
	if !sameFact(o, f) {
		return errors.New("its facts differ")
	}
	parsed := make([]byte, o.n)
	if err := cw.sp.readAt(parsed, o.off); err != nil {
		return err
	}
	if !bytes.Equal(parsed, copied) {
		return fmt.Errorf("its bytes differ: parsed %.80q, copied %.80q", parsed, copied)
	}
	return nil
}

// mergeShape adds a file's GraphQL shape after its lines.
func (cw *contentWrite) mergeShape(b []byte) error {
	s, err := gqlshape.Unmarshal(b)
	if err != nil {
		return fmt.Errorf("its GraphQL shape: %w", err)
	}
	cw.w.MergeShape(s)
	return nil
}
