package pipeline

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/catalogsync/catalogsync/sync/fbc"
)

// addLarge copies a file above the inline size to a scratch file in the
// pool's temp folder, hashing it on the way, and parses it from there on
// a worker. Memory then holds the parser's window (the file's largest
// object), not the file; and like a file read whole, it is parsed beside
// the next files and reused when the published content has its bytes.
func (pp *parsePool) addLarge(ctx context.Context, path string, size int64, r io.Reader, seq int) error {
	f, sum, err := pp.stage(path, r)
	if err != nil {
		return err
	}
	return pp.parseOn(ctx, path, seq, func() [32]byte { return sum },
		true, func(x *fbc.Parser, fn func(fbc.Object) error) error {
			return x.Parse(io.NewSectionReader(f, 0, size), fn, fbc.BorrowBlobs(), fbc.OneLargeAtATime(&pp.large))
		},
		func() { pp.scratch.put(f) }, func() {})
}

// stage copies r to the start of a scratch file and returns it with the
// sha256 of r. A failure to write locally is the spool's kind of error,
// not the image's.
func (pp *parsePool) stage(path string, r io.Reader) (*os.File, [32]byte, error) {
	var sum [32]byte
	f, err := pp.scratch.get()
	if err != nil {
		return nil, sum, spoolError(PhasePulling, err)
	}
	h := sha256.New()
	fw := &stageWriter{f: f}
	if pp.stageBuf == nil {
		pp.stageBuf = make([]byte, stageChunk)
	}
	if _, err := io.CopyBuffer(io.MultiWriter(fw, h), r, pp.stageBuf); err != nil {
		pp.scratch.put(f)
		if fw.err != nil && errors.Is(err, fw.err) {
			return nil, sum, spoolError(PhasePulling, err)
		}
		return nil, sum, fmt.Errorf("read %s: %w", path, err)
	}
	h.Sum(sum[:0])
	return f, sum, nil
}

// stageChunk is the copy buffer of stage, kept by the pool for the pull:
// io.Copy's own, 32 KiB per large file, was 5 MB of garbage per 222 MB
// catalog, and half the size took twice the writes.
const stageChunk = 128 << 10

// stageWriter writes from the start of f and remembers a write failure,
// to tell it from a read failure.
type stageWriter struct {
	f   *os.File
	off int64
	err error
}

func (w *stageWriter) Write(b []byte) (int, error) {
	n, err := w.f.WriteAt(b, w.off)
	w.off += int64(n)
	if err != nil {
		w.err = err
	}
	return n, err
}

// scratchFiles are unlinked files that large files wait in, each reused
// from its start: rewriting pages the kernel holds already costs less than
// a new file per catalog file. At most one per worker and one being
// written are in use.
type scratchFiles struct {
	dir  string
	free chan *os.File
}

func newScratchFiles(dir string, workers int) *scratchFiles {
	return &scratchFiles{dir: dir, free: make(chan *os.File, workers+1)}
}

func (s *scratchFiles) get() (*os.File, error) {
	select {
	case f := <-s.free:
		return f, nil
	default:
	}
	f, err := os.CreateTemp(s.dir, "catalogsync-file-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name()) // gone with its last handle, whatever happens
	return f, nil
}

// put gives f back; one beyond what the pool can use is closed.
func (s *scratchFiles) put(f *os.File) {
	select {
	case s.free <- f:
	default:
		f.Close()
	}
}

// close closes the files given back; call it once the parses are done.
func (s *scratchFiles) close() {
	for {
		select {
		case f := <-s.free:
			f.Close()
		default:
			return
		}
	}
}
