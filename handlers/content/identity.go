package content

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// Identity (not gzipped) answers go through http.ServeContent, which
// does conditional requests, Range (single and multipart) and HEAD as
// catalogd's own /all does. Two adapters let it run on stored content:
// lazyBody opens the content only when ServeContent first reads (never
// for HEAD, 304, 412 or 416), and heldWriter keeps the status back until
// the first body byte, so that a store failing on that first read is
// still answered with an error status, or retried.

// errClosed is a read of a body whose request has been answered.
var errClosed = errors.New("content: body read after the response ended")

// lazyBody is an io.ReadSeeker over size bytes that open reads from a
// given offset to the end. A Seek away from the current offset drops the
// open reader; the next Read opens another.
type lazyBody struct {
	size int64
	open func(off int64) (io.ReadCloser, error)

	// mu: ServeContent reads multipart ranges from a goroutine that may
	// outlive it when the client goes away.
	mu     sync.Mutex
	off    int64
	rc     io.ReadCloser
	err    error // the first failure to open or read
	closed bool
}

func (b *lazyBody) Seek(offset int64, whence int) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch whence {
	case io.SeekCurrent:
		offset += b.off
	case io.SeekEnd:
		offset += b.size
	}
	if offset < 0 {
		return 0, errors.New("content: seek before the start")
	}
	if offset != b.off && b.rc != nil {
		b.rc.Close()
		b.rc = nil
	}
	b.off = offset
	return offset, nil
}

func (b *lazyBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errClosed
	}
	if b.off >= b.size {
		return 0, io.EOF
	}
	if b.rc == nil {
		rc, err := b.open(b.off)
		if err != nil {
			b.fail(err)
			return 0, err
		}
		b.rc = rc
	}
	n, err := b.rc.Read(p[:min(int64(len(p)), b.size-b.off)])
	b.off += int64(n)
	if err == io.EOF && b.off < b.size {
		err = io.ErrUnexpectedEOF
	}
	if err != nil && err != io.EOF {
		b.fail(err)
	}
	return n, err
}

func (b *lazyBody) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Close releases the open reader; later reads fail.
func (b *lazyBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.rc != nil {
		b.rc.Close()
		b.rc = nil
	}
	return nil
}

func (b *lazyBody) failure() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// bytesFrom opens a held body at an offset.
func bytesFrom(body []byte, off int64) io.ReadCloser {
	return io.NopCloser(bytes.NewReader(body[min(off, int64(len(body))):]))
}

// streamFrom opens what write produces, from an offset: the bytes before
// it are produced and dropped (a range of a streamed query). Closing the
// reader stops write at its next write.
func streamFrom(ctx context.Context, off int64, write func(context.Context, io.Writer) error) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(write(ctx, &skipWriter{w: pw, skip: off}))
	}()
	return pr
}

// skipWriter drops the first skip bytes written.
type skipWriter struct {
	w    io.Writer
	skip int64
}

func (s *skipWriter) Write(p []byte) (int, error) {
	n := len(p)
	if s.skip >= int64(n) {
		s.skip -= int64(n)
		return n, nil
	}
	p = p[s.skip:]
	s.skip = 0
	if _, err := s.w.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// heldWriter holds the status back until the first body byte (or flush),
// and counts what reached the client.
type heldWriter struct {
	http.ResponseWriter
	code      int
	committed bool
	noRanges  bool
	cw        countWriter
}

func (h *heldWriter) WriteHeader(code int) {
	if h.code == 0 {
		h.code = code
	}
}

func (h *heldWriter) Write(p []byte) (int, error) {
	h.flush()
	return h.cw.Write(p)
}

// ReadFrom copies through pooled 128 KiB buffers (ServeContent's io.CopyN
// would allocate 32 KB each time): fewer, larger writes of /all.
func (h *heldWriter) ReadFrom(r io.Reader) (int64, error) {
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	return io.CopyBuffer(writerFunc(h.Write), r, *buf) // no ReadFrom: no recursion
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// flush sends the held status, if not yet sent.
func (h *heldWriter) flush() {
	if h.committed {
		return
	}
	h.committed = true
	if h.code == 0 {
		h.code = http.StatusOK
	}
	if h.noRanges {
		h.Header().Del("Accept-Ranges")
	}
	h.ResponseWriter.WriteHeader(h.code)
	h.cw.w = h.ResponseWriter
}

// serveIdentity answers r from body with http.ServeContent; the caller
// has set the ETag. Without ranges (/metas, as catalogd's) the answer
// does not offer Accept-Ranges; the caller has dropped the request's
// Range. It returns an error only while nothing was sent: the body failed
// on its first read, and the caller answers or retries.
func (h *Handler) serveIdentity(w http.ResponseWriter, r *http.Request, name string, mod time.Time, ranges bool, body *lazyBody) error {
	defer body.Close()
	w.Header().Set("Content-Type", contentType)
	hw := &heldWriter{ResponseWriter: w, noRanges: !ranges}
	http.ServeContent(hw, r, "", mod, body)
	err := body.failure()
	switch {
	case err == nil && hw.cw.err != nil:
		h.streamError(r, name, &hw.cw, hw.cw.err) // the client went away
	case err == nil:
		hw.flush()
	case !hw.committed:
		for _, k := range []string{"Content-Type", "Content-Length", "Content-Range", "ETag", "Last-Modified", "Accept-Ranges"} {
			w.Header().Del(k)
		}
		return err
	default:
		h.streamError(r, name, &hw.cw, err)
	}
	return nil
}

// metasRequest drops what catalogd's /metas handler does not honour
// (Range and If-Range), so /metas answers a range request as catalogd
// does: the whole answer. Conditions stay.
func metasRequest(r *http.Request) *http.Request {
	if r.Header.Get("Range") == "" && r.Header.Get("If-Range") == "" {
		return r
	}
	r = r.Clone(r.Context())
	r.Header.Del("Range")
	r.Header.Del("If-Range")
	return r
}
