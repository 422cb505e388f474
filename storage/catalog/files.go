package catalog

import (
	"context"
	"fmt"
	"io"

	"github.com/catalogsync/catalogsync/storage"
)

// filesFile holds the per-file summary a later sync of the same catalog
// reads to skip parsing the files that did not change. Its format is the
// sync's business (sync/pipeline); this package only stores it, before
// meta.json, so complete content has it whole or not at all.
const filesFile = "files"

// MaxFilesSize bounds a stored per-file summary: it holds a few facts per
// object, a small fraction of catalog.jsonl.
const MaxFilesSize = 256 << 20

// SetFiles gives the writer the content's per-file summary, read once
// the content ends (EndContent or Commit), so set it before; later calls
// are ignored. A reader rather than bytes: the summary grows with the
// catalog, and the sync keeps it on local disk. r must stay readable
// until Commit or Abort returns. Without one, the content is complete but
// a later sync parses every file again.
func (w *Writer) SetFiles(r *io.SectionReader) {
	if !w.ended {
		w.files = r
	}
}

// Size returns the bytes of catalog.jsonl added so far: the offset at
// which the next line starts.
func (w *Writer) Size() int64 { return w.size }

// putFiles stores the per-file summary, if any, and returns its size.
func (w *Writer) putFiles(ctx context.Context) (int64, error) {
	if w.files == nil {
		return 0, nil
	}
	if w.files.Size() > MaxFilesSize {
		return 0, nil // too large to be worth reading back: content stays complete without it
	}
	if _, err := w.store.Put(ctx, w.prefix+filesFile, io.NewSectionReader(w.files, 0, w.files.Size())); err != nil {
		return 0, fmt.Errorf("catalog: writing file summary: %w", err)
	}
	return w.files.Size(), nil
}

// OpenFiles opens the per-file summary stored with the complete content of
// name at digest (m, from HasContent): storage.ErrNotExist when it has none.
func OpenFiles(ctx context.Context, s storage.Store, m Meta) (io.ReadCloser, error) {
	if err := checkName(m.Name); err != nil {
		return nil, err
	}
	if err := checkDigest(m.Digest); err != nil {
		return nil, err
	}
	if m.FilesSize <= 0 || m.FilesSize > MaxFilesSize {
		return nil, fmt.Errorf("catalog: %s at %s: no file summary: %w", m.Name, m.Digest, storage.ErrNotExist)
	}
	return s.Get(ctx, contentPrefix(m.Name, m.Digest)+filesFile, 0, m.FilesSize)
}

// OpenLines opens n bytes of the catalog.jsonl described by m (complete
// content, from HasContent) from offset off; the range must lie within it.
func OpenLines(ctx context.Context, s storage.Store, m Meta, off, n int64) (io.ReadCloser, error) {
	if err := checkName(m.Name); err != nil {
		return nil, err
	}
	if err := checkDigest(m.Digest); err != nil {
		return nil, err
	}
	return openContent(ctx, s, m, off, n)
}
