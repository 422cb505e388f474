package metrics

import (
	"io"
	"net/http"
)

// recorder records the status and body size of one response for Observe.
// It is written here rather than taken from chi's middleware package,
// which links net/http/pprof and expvar (both register handlers at init)
// for its profiler.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

// WriteHeader records the first final status; 1xx informational answers
// come before it.
func (w *recorder) WriteHeader(code int) {
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

// ReadFrom keeps net/http's copy from a file (sendfile) available to
// io.Copy through the recorder.
func (w *recorder) ReadFrom(r io.Reader) (int64, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	rf, ok := w.ResponseWriter.(io.ReaderFrom)
	if !ok {
		rf = writerOnly{w.ResponseWriter}
	}
	n, err := rf.ReadFrom(r)
	w.bytes += int(n)
	return n, err
}

// Flush sends what is buffered, for streamed answers.
func (w *recorder) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath (deadlines).
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writerOnly copies with plain writes into a writer that cannot read from
// a reader itself.
type writerOnly struct{ io.Writer }

func (w writerOnly) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{w.Writer}, r)
}
